"""Frozen records exchanged by the calibration pipeline steps.

Every step of :mod:`figaroh.calibration._pipeline` is a plain function from
these records (or arrays) to a record; none of them sees the
:class:`~figaroh.calibration.base_calibration.BaseCalibration` instance. The
orchestrator builds the records from its state, calls the steps in the order
of :data:`figaroh.calibration._pipeline.STEP_ORDER`, and maps the records
back onto its 1.0.2 attributes and ``calib_config`` keys.

Units: positions [m], angles [rad], residual rows as returned by the cost
(dimensionless after the default weighting ``1/σ``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh._run.optimisation_trace import OptimisationTrace

__all__ = [
    "CalibrationRun",
    "EstimationProblem",
    "EstimationResult",
    "EstimationSettings",
    "FitOutcome",
    "MeasurementSpec",
    "ObservationSet",
    "OutlierFit",
    "ResidualModel",
    "StructuralLayout",
    "Uncertainty",
]


@dataclass(frozen=True)
class MeasurementSpec:
    """Shape of the flat measurement layout.

    Flat index of marker ``k``, measured component ``c``, posture ``s``:
    ``(k·n_meas + c)·n_samples + s``.

    Attributes:
        n_samples: Number of postures ``N``.
        n_markers: Number of measured frames ``K``.
        mask: Six booleans: which of ``[x, y, z, φx, φy, φz]`` are measured.
    """

    n_samples: int
    n_markers: int
    mask: Tuple[bool, ...]

    @classmethod
    def from_config(cls, calib_config: Mapping[str, Any], n_samples: int) -> MeasurementSpec:
        """Spec of ``calib_config`` (``NbMarkers``, ``measurability``) for ``n_samples``."""
        return cls(
            int(n_samples),
            int(calib_config["NbMarkers"]),
            tuple(bool(m) for m in calib_config["measurability"]),
        )

    @property
    def n_meas(self) -> int:
        """Measured components per marker."""
        return int(sum(self.mask))

    @property
    def rows_per_sample(self) -> int:
        """Flat rows contributed by one posture (``K·n_meas``)."""
        return self.n_markers * self.n_meas

    @property
    def mask_array(self) -> np.ndarray:
        """The mask as a (6,) boolean array."""
        return np.asarray(self.mask, dtype=bool)


@dataclass(frozen=True)
class ObservationSet:
    """Measured poses and postures in the 1.0.2 flat layout.

    Attributes:
        measured: Flat measured vector [m, rad] (NaN where not observed).
        q: (N, nq) configurations [rad, m].
        masked_samples: Postures removed by the data mask.
        source: The observation object they were read from (or None).
    """

    measured: np.ndarray
    q: np.ndarray
    masked_samples: int = 0
    source: Any = None


@dataclass(frozen=True)
class StructuralLayout:
    """Parameter list of the structural method and its base mapping.

    ``φ_base = M θ_e``: ``M`` maps every exciting joint parameter ``θ_e``
    (``param_names``) to the base representatives (``row_names``), which
    occupy ``slice`` of ``param_name``.

    Attributes:
        param_name: Calibration parameter names (base, joint, tip).
        matrix: (r, n_e) mapping matrix ``M``, or None without joint rows.
        param_names: Names of the exciting joint parameters (columns of ``M``).
        row_names: Names of the base representatives (rows of ``M``).
        slice: ``(start, stop)`` of the rows in ``param_name``.
        base_frame_row_names: Rows that the estimated base frame absorbs.
    """

    param_name: Tuple[str, ...]
    matrix: np.ndarray | None
    param_names: Tuple[str, ...]
    row_names: Tuple[str, ...]
    slice: Tuple[int, int] | None
    base_frame_row_names: Tuple[str, ...]


@dataclass(frozen=True)
class FitOutcome:
    """One least-squares fit of a parameter subset.

    Attributes:
        x: Fitted values [m, rad].
        fun: Objective rows at ``x`` (measurement rows first).
        jac: Jacobian of the measurement rows at ``x``, or None.
    """

    x: np.ndarray
    fun: np.ndarray
    jac: np.ndarray | None


@dataclass(frozen=True)
class ResidualModel:
    """The calibration objective as the estimators see it.

    The callables evaluate the orchestrator's cost (its ``cost_function``
    hook, prior rows and excluded rows included) for any parameter subset;
    ``samples`` selects training postures (indices into ``0..n_samples-1``).

    Attributes:
        initial_vector: ``names -> x0``: closed-form frames, joint parameters 0.
        jacobian: ``(names, x) -> J``: Jacobian of the predicted measurements
            (rows: flat layout, unobserved rows zero).
        fit: ``(names, x0, prior_weights, samples) -> FitOutcome``.
        score: ``(names, x, samples) -> rms`` of the measurement rows of the
            cost on those postures.
        n_samples: Number of loaded postures.
        n_rows: Number of flat measurement rows.
    """

    initial_vector: Callable[[Sequence[str]], np.ndarray]
    jacobian: Callable[[Sequence[str], np.ndarray], np.ndarray]
    fit: Callable[..., FitOutcome]
    score: Callable[[Sequence[str], np.ndarray, np.ndarray], float]
    n_samples: int
    n_rows: int


@dataclass(frozen=True)
class EstimationSettings:
    """``calib_config["estimation"]`` merged over the defaults.

    Attributes:
        method: Registered estimator name.
        priors: Prior standard deviation of each group [m or rad].
        noise_std: Given measurement noise [m or rad], or None to estimate it.
        excitation_k: Stopping ratio of the ``excitation`` method.
        cv_folds: Number of cross-validation folds.
        cv_seed: Seed of the fold permutation.
        cv_multipliers: Prior scales tried by ``map_cv``.
        cv_per_group: ``map_cv`` scales each prior group separately.
        cv_sizes: Joint-parameter counts tried by ``cv_subset`` (None: all).
        cv_rule: ``"min"`` or ``"one_se"``.
        dependency_tol: Residual-norm threshold of the dependency scan.
        absorbed_tol: Threshold of the structural frame-absorption scan.
    """

    method: str = "structural"
    priors: Mapping[str, float] = field(default_factory=dict)
    noise_std: float | None = None
    excitation_k: float = 1.0
    cv_folds: int = 5
    cv_seed: int = 0
    cv_multipliers: Tuple[float, ...] = (0.1, 0.3, 1.0, 3.0, 10.0)
    cv_per_group: bool = False
    cv_sizes: Tuple[int, ...] | None = None
    cv_rule: str = "min"
    dependency_tol: float = 1e-7
    absorbed_tol: float = 1e-4

    @classmethod
    def from_mapping(cls, st: Mapping[str, Any], absorbed_tol: float = 1e-4) -> EstimationSettings:
        """Settings from the merged mapping of :func:`~._pipeline.priors.settings`."""
        return cls(
            method=str(st["method"]),
            priors=dict(st["priors"]),
            noise_std=st["noise_std"],
            excitation_k=st["excitation_k"],
            cv_folds=st["cv_folds"],
            cv_seed=st["cv_seed"],
            cv_multipliers=tuple(st["cv_multipliers"]),
            cv_per_group=st["cv_per_group"],
            cv_sizes=None if st["cv_sizes"] is None else tuple(st["cv_sizes"]),
            cv_rule=st["cv_rule"],
            dependency_tol=st["dependency_tol"],
            absorbed_tol=float(absorbed_tol),
        )


@dataclass(frozen=True)
class EstimationProblem:
    """What an estimator chooses the parameter set from.

    Attributes:
        names: Candidate parameter vector (frames and joint parameters).
        frames: Base and tip frame names among ``names`` (never removed).
        joint_names: Joint-parameter candidates of the method.
        prior_groups: Prior group of each candidate (None for frames); empty
            when the method uses no prior.
        settings: Estimation settings.
        model: The objective (:class:`ResidualModel`).
    """

    names: Tuple[str, ...]
    frames: Tuple[str, ...]
    joint_names: Tuple[str, ...]
    prior_groups: Mapping[str, str | None]
    settings: EstimationSettings
    model: ResidualModel


@dataclass(frozen=True)
class EstimationResult:
    """The parameter set an estimator chose.

    Attributes:
        param_name: Calibration parameters, in candidate order.
        absorbed: Candidates the data do not determine on their own (their
            columns depend on the others, e.g. absorbed by the frames); the
            methods without priors leave them out, the MAP methods keep them
            (their priors determine them).
        prior_weights: Per-parameter prior row weights ``σ_noise/σ_prior``
            (0 for frames), or None without priors.
        prior_noise: Noise standard deviation the prior rows assume, or None.
        report: The estimation report (``calib_config["estimation_report"]``),
            or None for the structural method.
    """

    param_name: Tuple[str, ...]
    absorbed: Tuple[str, ...]
    prior_weights: np.ndarray | None = None
    prior_noise: float | None = None
    report: Dict[str, Any] | None = None


@dataclass(frozen=True)
class OutlierFit:
    """Result of the outlier-exclusion loop.

    Attributes:
        result: ``scipy.optimize.OptimizeResult`` of the last fit.
        excluded: Excluded posture indices (sorted).
        excluded_rows: Flat rows of the excluded postures.
        residuals: Unweighted flat residuals at ``result.x`` [m, rad].
        threshold: Per-posture position error threshold [m], or None.
        trace: The passes and the least-squares cost of their residual
            evaluations (see
            :func:`~figaroh.calibration._pipeline.outliers.fit_with_outlier_exclusion`).
    """

    result: Any
    excluded: List[int]
    excluded_rows: np.ndarray
    residuals: np.ndarray
    threshold: float | None
    trace: OptimisationTrace = field(default_factory=OptimisationTrace)


@dataclass(frozen=True)
class Uncertainty:
    """Parameter uncertainty of a fit.

    Attributes:
        std_dev: (n,) standard deviations in parameter units.
        std_pctg: (n,) ``|σ/x|`` ratios (0 where ``x = 0``).
        covariance: (n, n) ``σ²·pinv(JᵀJ)``, or None when not estimable.
    """

    std_dev: np.ndarray
    std_pctg: np.ndarray
    covariance: np.ndarray | None


def _no_rows() -> np.ndarray:
    return np.zeros(0, dtype=int)


@dataclass(frozen=True)
class CalibrationRun:
    """State of one calibration run, as the orchestrator exposes it.

    ``BaseCalibration`` keeps one of these and maps its 1.0.2 attributes
    (``PEE_measured``, ``q_measured``, ``LM_result``, ``var_``,
    ``evaluation_metrics``, ``results_data``, ``std_dev``, …) onto its fields;
    assigning such an attribute replaces the record.

    Attributes:
        observations: Loaded training observations.
        PEE_measured: Flat measured vector [m, rad].
        q_measured: (N, nq) postures.
        val_observations: Loaded held-out observations.
        PEE_val: Flat held-out measured vector.
        q_val: Held-out postures.
        val_available: Whether held-out data were loaded.
        LM_result: ``OptimizeResult`` of the last fit.
        var_: Fitted values [m, rad].
        uncalib_values: Nominal values (zeros) of the fitted parameters.
        evaluation_metrics: Metrics of the last fit.
        results_data: Everything the last solve stored.
        outlier_indices: Excluded postures.
        std_dev: Parameter standard deviations.
        std_pctg: ``|σ/x|`` ratios.
        C_param: Parameter covariance.
        excluded_rows: Flat rows zeroed in the objective.
        outlier_threshold: Outlier threshold of the last fit [m].
        estimation_report: Report of a non-structural estimation method.
        PEE_dist: (K, N) per-point residual norms of the last fit.
        run_provenance: Provenance record of the last solve.
    """

    observations: Any = None
    PEE_measured: np.ndarray | None = None
    q_measured: np.ndarray | None = None
    val_observations: Any = None
    PEE_val: np.ndarray | None = None
    q_val: np.ndarray | None = None
    val_available: bool = False
    LM_result: Any = None
    var_: np.ndarray | None = None
    uncalib_values: np.ndarray | None = None
    evaluation_metrics: Dict[str, Any] | None = None
    results_data: Dict[str, Any] | None = None
    outlier_indices: List[int] = field(default_factory=list)
    std_dev: np.ndarray | None = None
    std_pctg: np.ndarray | None = None
    C_param: np.ndarray | None = None
    excluded_rows: np.ndarray = field(default_factory=_no_rows)
    outlier_threshold: float | None = None
    estimation_report: Dict[str, Any] | None = None
    PEE_dist: np.ndarray | None = None
    run_provenance: Any = None
