"""``map``: every candidate with zero-mean Gaussian priors on the joint parameters.

The objective gains one row per parameter, ``(σ_noise/σ_prior,i)·θ_i``
(frames: weight 0), i.e. the maximum a posteriori estimate under the
group priors; the parameter covariance then uses ``σ_noise²``.
"""

from __future__ import annotations

from figaroh.calibration._pipeline.estimators._common import (
    base_report,
    finish,
    prefit,
    prior_weights,
)
from figaroh.calibration._pipeline.records import EstimationProblem, EstimationResult

__all__ = ["estimate_map"]


def estimate_map(problem: EstimationProblem) -> EstimationResult:
    """All candidates, prior weights ``σ_noise/σ_prior`` (report: the common keys)."""
    pre = prefit(problem)
    report = base_report(problem, pre)
    final = list(problem.names)
    return finish(problem, pre, report, final, prior_weights(problem, final, pre.noise))
