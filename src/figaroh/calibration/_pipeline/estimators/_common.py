"""Shared steps of the non-structural estimators: pre-fit, noise, priors, folds.

Every non-structural estimator starts from the same pre-fit
(:func:`prefit`): the candidates the data determine (a greedy dependency
scan of the measurement Jacobian at the initial vector, frames always
kept), one least-squares fit of those, and the measurement noise
``σ = sqrt(Σ r² / (m − n))`` of its measurement rows (or the given
``noise_std``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh.calibration._pipeline.errors import EstimationError
from figaroh.calibration._pipeline.records import EstimationProblem, EstimationResult
from figaroh.calibration.calibration_tools import select_identifiable_parameters

logger = logging.getLogger(__name__)

__all__ = [
    "Prefit",
    "base_report",
    "cross_validate",
    "finish",
    "folds",
    "identifiable_split",
    "prefit",
    "prior_group_names",
    "prior_weights",
]


@dataclass(frozen=True)
class Prefit:
    """The common first stage of the non-structural estimators.

    Attributes:
        identifiable: Candidates the data determine (candidate order).
        dependent: The other candidates.
        guess: Initial value of every candidate.
        fitted: Pre-fit value of every identifiable candidate.
        jac: Measurement-row Jacobian of the pre-fit.
        noise: Measurement noise standard deviation [m or rad].
        noise_source: ``"given"`` or ``"estimated"``.
    """

    identifiable: List[str]
    dependent: List[str]
    guess: Dict[str, float]
    fitted: Dict[str, float]
    jac: np.ndarray | None
    noise: float
    noise_source: str


def identifiable_split(
    problem: EstimationProblem, names: Sequence[str], x0: np.ndarray, tol: float
) -> Tuple[List[str], List[str]]:
    """``(kept, dependent)`` of ``names`` by the dependency scan at ``x0`` (frames kept)."""
    J = problem.model.jacobian(list(names), x0)
    return select_identifiable_parameters(
        J, list(names), always_keep=problem.frames, tol=float(tol)
    )


def prefit(problem: EstimationProblem) -> Prefit:
    """Dependency scan, pre-fit of the identifiable candidates and the noise level.

    Raises:
        EstimationError: too few measurement rows to estimate the noise
            (and no ``noise_std`` given).
    """
    names = list(problem.names)
    x_guess = problem.model.initial_vector(names)
    guess = dict(zip(names, x_guess, strict=True))
    ident, dependent = identifiable_split(problem, names, x_guess, problem.settings.dependency_tol)
    x0 = np.array([guess[n] for n in ident])
    pre = problem.model.fit(ident, x0, None, None)
    m = problem.model.n_rows
    if problem.settings.noise_std is not None:
        noise, source = float(problem.settings.noise_std), "given"
    else:
        if m <= len(ident):
            raise EstimationError(
                f"{m} measurement rows for {len(ident)} identifiable parameters: cannot estimate "
                "the noise; give estimation.noise_std or collect more postures"
            )
        r = np.asarray(pre.fun, dtype=float)[:m]
        noise, source = float(np.sqrt(np.sum(r**2) / (m - len(ident)))), "estimated"
    fitted = dict(zip(ident, pre.x, strict=True))
    return Prefit(ident, list(dependent), guess, fitted, pre.jac, noise, source)


def base_report(problem: EstimationProblem, pre: Prefit) -> Dict[str, Any]:
    """The report keys every non-structural method writes first."""
    return {
        "method": problem.settings.method,
        "candidates": list(problem.joint_names),
        "dependent": list(pre.dependent),
        "noise_std": pre.noise,
        "noise_source": pre.noise_source,
        "priors": dict(problem.settings.priors),
    }


def prior_weights(
    problem: EstimationProblem,
    names: Sequence[str],
    noise: float,
    scale: Mapping[str, float] | float = 1.0,
) -> np.ndarray:
    """Prior row weights ``σ_noise / (σ_prior,g · scale_g)`` (0 for frames)."""
    priors = problem.settings.priors
    w = np.zeros(len(names))
    for i, n in enumerate(names):
        g = problem.prior_groups[n]
        if g is None:
            continue
        s = scale if isinstance(scale, (int, float)) else scale.get(g, 1.0)
        w[i] = noise / (priors[g] * s)
    return w


def prior_group_names(problem: EstimationProblem, names: Sequence[str]) -> List[str]:
    """Sorted prior groups present among ``names``."""
    groups = (problem.prior_groups[n] for n in names)
    return sorted({g for g in groups if g is not None})


def folds(n: int, k: int, seed: int) -> List[np.ndarray]:
    """``k`` sorted test folds of a seeded permutation of ``0..n-1``.

    Raises:
        EstimationError: ``k`` outside ``2..n``.
    """
    if not 2 <= k <= n:
        raise EstimationError(
            f"cv_folds must be between 2 and the number of postures ({n}), got {k}"
        )
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(c) for c in np.array_split(perm, k)]


def cross_validate(
    problem: EstimationProblem,
    names: Sequence[str],
    x0_map: Mapping[str, float],
    weights: np.ndarray | None,
) -> Tuple[float, float]:
    """Mean and standard error of the held-out rms over the folds.

    Each fold fits ``names`` (start ``x0_map``, prior ``weights``) on the
    other postures and scores the cost's measurement rows on the fold.
    """
    st = problem.settings
    N = problem.model.n_samples
    scores: List[float] = []
    for test in folds(N, int(st.cv_folds), int(st.cv_seed)):
        train = np.setdiff1d(np.arange(N), test)
        x0 = np.array([x0_map.get(n, 0.0) for n in names])
        fit = problem.model.fit(names, x0, weights, train)
        scores.append(problem.model.score(names, fit.x, test))
    rms = np.asarray(scores)
    se = float(np.std(rms, ddof=1) / np.sqrt(len(rms))) if len(rms) > 1 else 0.0
    return float(np.mean(rms)), se


def finish(
    problem: EstimationProblem,
    pre: Prefit,
    report: Dict[str, Any],
    final_names: Sequence[str],
    weights: np.ndarray | None,
) -> EstimationResult:
    """Order the chosen names as the candidates and assemble the result."""
    chosen = set(final_names)
    ordered = [n for n in problem.names if n in chosen]
    if weights is not None:
        w_map = dict(zip(ordered, weights, strict=False))
        weights = np.array([w_map[n] for n in ordered])
    report["param_name"] = list(ordered)
    logger.info(
        "estimation %s: %d parameters (%d dependent candidates)",
        problem.settings.method,
        len(ordered),
        len(pre.dependent),
    )
    return EstimationResult(
        param_name=tuple(ordered),
        absorbed=tuple(pre.dependent),
        prior_weights=weights,
        prior_noise=pre.noise if weights is not None else None,
        report=report,
    )
