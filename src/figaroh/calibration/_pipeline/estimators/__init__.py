"""Registry of the estimation methods of a geometric calibration.

An estimator chooses the calibration parameter set (and its Gaussian priors)
from an :class:`~figaroh.calibration._pipeline.records.EstimationProblem`.
Every estimator has the same signature::

    def estimator(problem: EstimationProblem) -> EstimationResult

and is registered under its ``calib_config["estimation"]["method"]`` name:

* ``structural`` — QR base representatives minus what the frames absorb;
* ``excitation`` — identifiable candidates, backward elimination by excitation;
* ``cv_subset`` — the same order, subset size by cross-validation;
* ``map`` — every candidate with Gaussian priors;
* ``map_cv`` — ``map`` with the prior scale by cross-validation.

:func:`estimate` is the one front end; an unknown name raises
:class:`~figaroh.calibration._pipeline.errors.UnknownEstimatorError` listing
the registered ones.
"""

from __future__ import annotations

from typing import Callable, Dict, List

from figaroh.calibration._pipeline.errors import UnknownEstimatorError
from figaroh.calibration._pipeline.estimators.cv_subset import estimate_cv_subset
from figaroh.calibration._pipeline.estimators.excitation import estimate_excitation
from figaroh.calibration._pipeline.estimators.map import estimate_map
from figaroh.calibration._pipeline.estimators.map_cv import estimate_map_cv
from figaroh.calibration._pipeline.estimators.structural import estimate_structural
from figaroh.calibration._pipeline.records import EstimationProblem, EstimationResult

__all__ = ["ESTIMATORS", "Estimator", "estimate", "register", "registered"]

Estimator = Callable[[EstimationProblem], EstimationResult]

#: ``name → estimator``, the methods :func:`estimate` dispatches to.
ESTIMATORS: Dict[str, Estimator] = {
    "structural": estimate_structural,
    "excitation": estimate_excitation,
    "cv_subset": estimate_cv_subset,
    "map": estimate_map,
    "map_cv": estimate_map_cv,
}


def registered() -> List[str]:
    """Names of the registered estimators, sorted."""
    return sorted(ESTIMATORS)


def register(name: str, estimator: Estimator) -> None:
    """Register ``estimator`` under ``name`` (replacing an existing entry)."""
    if not callable(estimator):
        raise TypeError(f"estimator {name!r} must be callable, got {type(estimator).__name__}")
    ESTIMATORS[str(name)] = estimator


def estimate(problem: EstimationProblem, method: str | None = None) -> EstimationResult:
    """Choose the parameter set of ``problem`` with the estimator ``method``.

    Args:
        problem: The estimation problem.
        method: Registered estimator name (default ``problem.settings.method``).

    Returns:
        The estimator's :class:`EstimationResult`.

    Raises:
        UnknownEstimatorError: ``method`` is not registered (the message lists
            the registered names).
    """
    name = problem.settings.method if method is None else method
    fn = ESTIMATORS.get(name)
    if fn is None:
        raise UnknownEstimatorError(
            f"unknown estimation method {name!r}; registered: {', '.join(registered())}"
        )
    return fn(problem)
