"""The least-squares objective of a calibration, as a collaborator of ``BaseCalibration``.

:class:`CalibrationObjective` is held by the orchestrator in one attribute
(``_objective_model``). It owns what the fit needs around the cost hooks: the
cached parameter layout, the initial vector, the residual evaluations, the
objective's Jacobian, the ``scipy.optimize.least_squares`` call, the
temporary swaps of data or parameters of the auxiliary fits, and the
:class:`~figaroh.calibration._pipeline.records.ResidualModel` the estimators
see. It calls the figaroh 1.0.2 hooks through the orchestrator (its
``cost_function``, ``_compute_logmap_residuals``,
``apply_measurement_weighting``, ``cost_jacobian``, ``_objective`` and
``initial_frame_guess``), so a subclass override is used everywhere.

Least squares: ``scipy.optimize.least_squares`` with figaroh 1.0.2's
arguments — its default finite-difference Jacobian (``jac="2-point"``) and
default tolerances. ``calib_config["jacobian"] = "analytic"`` (config
``parameters.jacobian: analytic``) passes the analytic Jacobian of the
orchestrator's ``cost_jacobian`` instead: fewer objective evaluations, a fit
that stops at a slightly different point (the two Jacobians differ by the
finite-difference error).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from typing import Any, ContextManager, Iterator, List, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from figaroh._run.optimisation_trace import cost_recorded
from figaroh.calibration import calibration_tools as ct
from figaroh.calibration._pipeline import residuals as _residuals
from figaroh.calibration._pipeline.records import FitOutcome, MeasurementSpec, ResidualModel
from figaroh.calibration._pipeline.validation import fit_frames_only
from figaroh.calibration.config import JACOBIAN_CHOICES
from figaroh.utils.error_handling import CalibrationError

logger = logging.getLogger(__name__)

__all__ = [
    "CalibrationObjective",
    "finite_difference",
    "jacobian_option",
    "prior_rows",
    "rows_per_sample",
]

#: Cost hooks whose override the default analytic Jacobian does not follow.
COST_HOOKS = ("cost_function", "_compute_logmap_residuals", "apply_measurement_weighting")


def rows_per_sample(calib_config: Any) -> int:
    """Flat measurement rows per posture: markers × measured components."""
    return int(calib_config.get("NbMarkers", 1)) * int(
        np.count_nonzero(calib_config["measurability"])
    )


def jacobian_option(calib_config: Any) -> str:
    """``calib_config["jacobian"]`` (default ``"2-point"``), checked.

    Raises:
        CalibrationError: a value other than ``"2-point"`` or ``"analytic"``.
    """
    value = calib_config.get("jacobian", "2-point")
    if value is None:
        return "2-point"
    if value not in JACOBIAN_CHOICES:
        raise CalibrationError(
            f"calib_config['jacobian'] (config parameters.jacobian) is {value!r}: use "
            "'2-point' (finite differences, figaroh 1.0.2's default) or 'analytic'"
        )
    return str(value)


def prior_rows(prior_weights: Any, var: np.ndarray) -> np.ndarray | None:
    """Rows ``w_i · θ_i`` of Gaussian priors (None without priors).

    Raises:
        CalibrationError: the weights do not match the parameter vector.
    """
    if prior_weights is None:
        return None
    w = np.asarray(prior_weights, dtype=float)
    if w.size != var.size:
        raise CalibrationError(
            f"prior_weights has {w.size} entries for {var.size} parameters; rerun "
            "create_param_list()"
        )
    return w * var


def finite_difference(fun: Any, x: np.ndarray, step: float = 1e-7) -> np.ndarray:
    """Forward-difference Jacobian of ``fun`` at ``x`` (step ``1e-7 · max(1, |x_i|)``)."""
    f0 = np.asarray(fun(x), dtype=float)
    J = np.empty((f0.size, x.size))
    for i in range(x.size):
        dx = np.zeros_like(x)
        dx[i] = step * max(1.0, abs(x[i]))
        J[:, i] = (np.asarray(fun(x + dx), dtype=float) - f0) / dx[i]
    return J


class CalibrationObjective:
    """The objective of one calibration instance (its hooks) and its cached layout.

    Args:
        owner: The calibration orchestrator whose hooks, data and
            ``calib_config`` the objective reads.
        base: The orchestrator's base class, to tell which hooks a subclass
            overrides.
    """

    def __init__(self, owner: Any, base: type) -> None:
        self._owner = owner
        self._base = base
        self._layout_cache: Tuple[Tuple[str, ...], Any] | None = None
        self._warned_default_cost = False
        self._frames_only: Tuple[Any, np.ndarray | None] | None = None
        self._fallback_warned: Any = None

    # ------------------------------------------------------------------ views of the owner
    @property
    def _cfg(self) -> Any:
        return self._owner.calib_config

    @property
    def n_samples(self) -> int:
        """Number of loaded postures (``calib_config["NbSample"]``)."""
        return int(self._cfg.get("NbSample", 0))

    def frame_names(self) -> List[str]:
        """Base and tip frame names among ``param_name``."""
        return ct.frame_names(self._cfg["param_name"])

    def spec(self, n_samples: int | None = None) -> MeasurementSpec:
        """Measurement layout for ``n_samples`` postures (default: the loaded ones)."""
        n = self.n_samples if n_samples is None else n_samples
        return MeasurementSpec.from_config(self._cfg, n)

    def layout(self) -> Any:
        """Parameter layout of ``param_name`` (cached until the names change)."""
        names = tuple(self._cfg["param_name"])
        if self._layout_cache is None or self._layout_cache[0] != names:
            self._layout_cache = (names, ct._layout(self._owner.model, self._cfg))
        return self._layout_cache[1]

    def forget_layout(self) -> None:
        """Drop the cached layout (after ``param_name`` changed)."""
        self._layout_cache = None

    def n_observations(self, excluded_rows: np.ndarray | None = None) -> int:
        """Number of observed (finite) measurement entries, excluded rows not counted."""
        return _residuals.n_observations(self._owner.PEE_measured, excluded_rows)

    def initial_vector(self) -> np.ndarray:
        """Start of the fit: the ``initial_frame_guess`` hook's frames, joint parameters 0."""
        names = list(self._cfg["param_name"])
        x0 = np.zeros(len(names))
        for k, v in self._owner.initial_frame_guess().items():
            x0[names.index(k)] = v
        return x0

    # ------------------------------------------------------------------ residuals
    def measurement_residuals(
        self,
        var: ArrayLike,
        jacobian: bool = False,
        *,
        position_frame: str = "body",
        q: np.ndarray | None = None,
        measured: ArrayLike | None = None,
    ) -> Tuple[np.ndarray, np.ndarray | None]:
        """Unweighted log-map residuals (flat layout) and, optionally, their Jacobian [m, rad]."""
        calib = self._owner
        if q is None:
            if calib.q_measured is None or calib.PEE_measured is None:
                raise CalibrationError("Call load_data_set() first")
            q = calib.q_measured[: self.n_samples]
            measured = calib.PEE_measured
        elif measured is None:
            raise CalibrationError(
                "measurement_residuals: q given without measured; pass the flat measured "
                "vector matching q"
            )
        return _residuals.measurement_residuals(
            calib.model,
            calib.data,
            var,
            q,
            measured,
            self._cfg,
            jacobian=jacobian,
            position_frame=position_frame,
            layout=self.layout(),
        )

    def logmap_residuals_at(
        self, var: ArrayLike, q: np.ndarray | None = None, measured: Any = None
    ) -> np.ndarray:
        """Unweighted flat residuals at ``var``, as figaroh 1.0.2 evaluates a fit [m, rad].

        ``owner._compute_logmap_residuals(measured, calc_updated_fkm(var, q))``
        with ``calib_config["NbSample"] = len(q)`` during the call (default:
        the loaded postures and ``PEE_measured``).
        """
        calib = self._owner
        if q is None:
            if calib.q_measured is None or calib.PEE_measured is None:
                raise CalibrationError("Call load_data_set() first")
            q, measured, n = calib.q_measured, calib.PEE_measured, self.n_samples
        else:
            q = np.atleast_2d(np.asarray(q, dtype=float))
            n = len(q)
        cfg = self._cfg
        saved = cfg.get("NbSample")
        cfg["NbSample"] = n
        try:
            est = ct.calc_updated_fkm(calib.model, calib.data, var, q, cfg)
            r = calib._compute_logmap_residuals(measured, est)
        finally:
            cfg["NbSample"] = saved
        return np.asarray(r, dtype=float).ravel()

    def residual_array(self, var: np.ndarray, q: Any = None, measured: Any = None) -> np.ndarray:
        """(N, K, n_meas) residuals of :meth:`logmap_residuals_at` [m, rad]."""
        r = self.logmap_residuals_at(var, q=q, measured=measured)
        n = len(q) if q is not None else self.n_samples
        return _residuals.residual_array(r, self.spec(n))

    def identifiability_jacobian(self, var: np.ndarray) -> np.ndarray:
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
        calib = self._owner
        q = calib.q_measured[: self.n_samples]
        J = ct.measurement_jacobian(calib.model, calib.data, var, q, self._cfg)
        observed = np.isfinite(np.asarray(calib.PEE_measured, dtype=float))
        if not observed.all():
            J = np.where(observed[:, None], J, 0.0)
        return J

    # ------------------------------------------------------------------ the default cost
    def default_cost(self, var: ArrayLike) -> np.ndarray:
        """figaroh 1.0.2's default ``cost_function`` (see the orchestrator's hook)."""
        calib = self._owner
        if not self._warned_default_cost:
            warnings.warn(
                f"Using default cost function for {type(calib).__name__}: weighted log-map "
                "residuals (override cost_function for robot-specific terms)",
                UserWarning,
                stacklevel=3,
            )
            self._warned_default_cost = True
        if self.jacobian_mode() == "analytic":
            r, _ = self.measurement_residuals(var)
        else:
            est = ct.calc_updated_fkm(calib.model, calib.data, var, calib.q_measured, self._cfg)
            r = np.asarray(calib._compute_logmap_residuals(calib.PEE_measured, est), dtype=float)
        try:
            return calib.apply_measurement_weighting(r)
        except (KeyError, AttributeError):
            return r

    def default_cost_jacobian(self, var: ArrayLike) -> np.ndarray:
        """Rows ``w_i · ∂r_i/∂θ`` of the weighted body-frame log-map residuals."""
        r, J = self.measurement_residuals(var, jacobian=True)
        w = ct.measurement_weights(self._cfg, r.size // max(1, rows_per_sample(self._cfg)))
        return J * w[:, None]

    def _overridden(self, name: str) -> bool:
        """Whether the owner's class overrides the base method ``name``."""
        return getattr(type(self._owner), name) is not getattr(self._base, name)

    def has_analytic_jacobian(self) -> bool:
        """Whether ``cost_jacobian`` differentiates ``cost_function``.

        True when ``cost_jacobian`` is overridden or no cost hook is (for
        the default cost it is the Jacobian of the body-frame residuals, whose
        per-point norms are those of the default cost).
        """
        if self._overridden("cost_jacobian"):
            return True
        return not any(self._overridden(h) for h in COST_HOOKS)

    def jacobian_mode(self) -> str:
        """Jacobian of the fit: ``"2-point"``, ``"analytic"`` or ``"analytic (user)"``.

        Raises:
            CalibrationError: ``jacobian: analytic`` with a cost hook
                overridden but not ``cost_jacobian``.
        """
        if jacobian_option(self._cfg) == "2-point":
            return "2-point"
        if self._overridden("cost_jacobian"):
            return "analytic (user)"
        hooks = [h for h in COST_HOOKS if self._overridden(h)]
        if hooks:
            raise CalibrationError(
                f"calib_config['jacobian'] is 'analytic' but {type(self._owner).__name__} "
                f"overrides {', '.join(hooks)} without cost_jacobian: override "
                "cost_jacobian(var) with the Jacobian of your cost rows, or set "
                "parameters.jacobian: 2-point"
            )
        return "analytic"

    # ------------------------------------------------------------------ the objective
    def objective(self, var: ArrayLike) -> np.ndarray:
        """What the solver minimises: cost rows (excluded outlier rows zeroed) + prior rows."""
        calib = self._owner
        var = np.asarray(var, dtype=float)
        r = np.array(calib.cost_function(var), dtype=float, copy=True).ravel()
        if calib._excluded_rows.size:
            r[calib._excluded_rows] = 0.0
        p = prior_rows(self._cfg.get("prior_weights"), var)
        return r if p is None else np.concatenate([r, p])

    def objective_jacobian(self, var: ArrayLike) -> np.ndarray:
        """Jacobian of :meth:`objective` from ``cost_jacobian`` (excluded rows zeroed, priors)."""
        calib = self._owner
        var = np.asarray(var, dtype=float)
        J = np.array(calib.cost_jacobian(var), dtype=float, copy=True)
        if calib._excluded_rows.size:
            J[calib._excluded_rows] = 0.0
        w = self._cfg.get("prior_weights")
        if w is not None:
            J = np.vstack([J, np.diag(np.asarray(w, dtype=float))])
        return J

    def least_squares(self, x0: np.ndarray, method: str = "lm", max_nfev: int = 1000) -> Any:
        """One ``scipy.optimize.least_squares`` fit of the owner's ``_objective`` from ``x0``.

        Default (``calib_config["jacobian"]`` absent or ``"2-point"``): the call
        figaroh 1.0.2 makes, ``least_squares(calib._objective, x0, method=method,
        max_nfev=max_nfev)`` — finite-difference Jacobian, default tolerances
        (``ftol = xtol = gtol = 1e-8``). With ``"analytic"``: the same call with
        ``jac=`` :meth:`objective_jacobian`. Inside a
        :func:`~figaroh._run.optimisation_trace.recording_costs` scope the
        objective is passed through
        :func:`~figaroh._run.optimisation_trace.cost_recorded` (the cost of
        each evaluation is recorded; the residuals, hence the fit, are the same).

        Raises:
            CalibrationError: an invalid ``calib_config["jacobian"]``, or the
                analytic Jacobian asked for a cost it cannot differentiate.
        """
        from scipy.optimize import least_squares

        fun = cost_recorded(self._owner._objective)
        if self.jacobian_mode() == "2-point":
            return least_squares(fun, x0, method=method, max_nfev=max_nfev)
        return least_squares(fun, x0, jac=self.objective_jacobian, method=method, max_nfev=max_nfev)

    def dependent_parameters(self, x0: np.ndarray, tol: float = 1e-6) -> List[str]:
        """Parameters that are linear combinations of the others in the objective's Jacobian."""
        calib = self._owner
        names = list(self._cfg["param_name"])
        if self.has_analytic_jacobian():
            J = self.objective_jacobian(x0)
        else:
            J = finite_difference(calib._objective, x0)
        J = J[: len(calib.PEE_measured)]
        _, dependent = ct.select_identifiable_parameters(J, names, tol=tol)
        return dependent

    def warn_if_singular(self, x0: np.ndarray, tol: float = 1e-6) -> None:
        """Warn (``UserWarning``) when the parameter set is structurally singular at ``x0``."""
        try:
            dependent = self.dependent_parameters(x0, tol)
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

    def frames_only_fit(self) -> np.ndarray | None:
        """Nominal joints with best-fit metrology frames (training data, kept samples).

        The fair "before" reference: the nominal model still needs its base
        and tip frames to be compared with measurements. Returns the full
        parameter vector (joint parameters 0), or None without frame
        parameters. Cached per fit.
        """
        calib = self._owner
        if self._frames_only is not None and self._frames_only[0] is calib.LM_result:
            return self._frames_only[1]
        frames = self.frame_names()
        if not frames or calib.q_measured is None:
            return None
        x = fit_frames_only(
            lambda v: self.measurement_residuals(v, jacobian=True),
            list(self._cfg["param_name"]),
            frames,
            self.initial_vector(),
            ct.measurement_weights(self._cfg, self.n_samples),
            calib._excluded_rows,
        )
        self._frames_only = (calib.LM_result, x)
        return x

    def validation_set(self) -> Tuple[np.ndarray, np.ndarray, str] | None:
        """Postures, measurements and source label the validation metrics use.

        The held-out set when one was loaded, else the calibration data (a
        warning, once per fit).
        """
        calib = self._owner
        if calib._val_available and calib._q_val is not None:
            return calib._q_val, calib._PEE_val, "validation_data"
        if calib.q_measured is None:
            return None
        if self._fallback_warned is not calib.LM_result:
            logger.warning(
                "No held-out validation data: validation metrics are computed on the "
                "calibration data (not an independent test). Set data.validation_data_file."
            )
            self._fallback_warned = calib.LM_result
        return calib.q_measured[: self.n_samples], calib.PEE_measured, "calibration_data_fallback"

    # ------------------------------------------------------------------ the estimators' view
    def residual_model(self) -> ResidualModel:
        """The objective of the owner (its hooks) for the estimators."""
        return ResidualModel(
            initial_vector=self._initial_vector_of,
            jacobian=self._jacobian_of,
            fit=self._fit_subset,
            score=self._score_subset,
            n_samples=self.n_samples,
            n_rows=len(self._owner.PEE_measured),
        )

    def _params_context(self, names: Sequence[str]) -> ContextManager[None]:
        if list(names) == list(self._cfg["param_name"]):
            return contextlib.nullcontext()
        return self.temporary_params(list(names), None)

    def _initial_vector_of(self, names: Sequence[str]) -> np.ndarray:
        with self._params_context(names):
            return self.initial_vector()

    def _jacobian_of(self, names: Sequence[str], x: np.ndarray) -> np.ndarray:
        with self._params_context(names):
            return self.identifiability_jacobian(x)

    def _split_samples(self, idx: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Postures and flat measurements of the posture indices ``idx``."""
        calib, N = self._owner, self.n_samples
        keep = np.isin(np.arange(len(calib.PEE_measured)) % N, idx)
        return calib.q_measured[:N][idx], calib.PEE_measured[keep]

    def _fit_subset(
        self,
        names: Sequence[str],
        x0: np.ndarray,
        prior_weights: np.ndarray | None = None,
        samples: np.ndarray | None = None,
        max_nfev: int = 2000,
    ) -> FitOutcome:
        """Least-squares fit of ``names`` (optionally on the postures ``samples``).

        ``scipy.optimize.least_squares(calib._objective, x0, method=…,
        max_nfev=max_nfev)`` with ``method="lm"`` when there are at least as
        many rows as parameters, else ``"trf"`` (figaroh 1.0.2's preliminary
        fit); the analytic Jacobian when ``calib_config["jacobian"]`` asks for it.
        """
        calib = self._owner
        if samples is not None:
            ctx_data: ContextManager[None] = self.temporary_data(*self._split_samples(samples))
        else:
            ctx_data = contextlib.nullcontext()
        with ctx_data, self.temporary_params(list(names), prior_weights):
            n_rows = len(calib._objective(x0))
            method = "lm" if n_rows >= len(names) else "trf"
            res = self.least_squares(x0, method, max_nfev)
            n_meas = len(calib.PEE_measured)
            J = res.jac[:n_meas] if res.jac is not None else None
        return FitOutcome(res.x, res.fun, J)

    def _score_subset(self, names: Sequence[str], x: np.ndarray, samples: np.ndarray) -> float:
        """RMS of the cost's measurement rows at ``x`` on the postures ``samples``."""
        q, pee = self._split_samples(samples)
        with self.temporary_data(q, pee), self.temporary_params(list(names), None):
            r = np.asarray(self._owner.cost_function(x), dtype=float)[: len(pee)]
        return float(np.sqrt(np.mean(r**2)))

    @contextlib.contextmanager
    def temporary_data(self, q: np.ndarray, pee: np.ndarray) -> Iterator[None]:
        """Swap the loaded postures/measurements (used by cross-validation)."""
        calib, cfg = self._owner, self._cfg
        saved = (calib.q_measured, calib.PEE_measured, cfg["NbSample"], calib._excluded_rows)
        calib.q_measured, calib.PEE_measured = q, pee
        cfg["NbSample"] = len(q)
        calib._excluded_rows = np.zeros(0, dtype=int)
        try:
            yield
        finally:
            calib.q_measured, calib.PEE_measured, cfg["NbSample"], calib._excluded_rows = saved

    @contextlib.contextmanager
    def temporary_params(self, names: Sequence[str], prior_weights: Any = None) -> Iterator[None]:
        """Swap ``param_name`` (and ``prior_weights``) during an auxiliary fit."""
        cfg = self._cfg
        saved = (list(cfg["param_name"]), cfg.get("prior_weights"))
        cfg["param_name"] = list(names)
        cfg["prior_weights"] = prior_weights
        self._layout_cache = None
        try:
            yield
        finally:
            cfg["param_name"], cfg["prior_weights"] = saved
            self._layout_cache = None
