"""``structural``: the QR base representatives minus what the frames absorb.

The candidates are the structural base columns of the kinematic regressor
plus the base and tip frames (see
:func:`~figaroh.calibration._pipeline.layout.structural_layout`). The
measurement Jacobian at the initial vector (closed-form frames, joint
parameters 0) is scanned greedily with the frames always kept; a joint
parameter whose unit column has a residual norm ≤ ``absorbed_tol`` after
projecting out the kept ones is absorbed (dropped). No prior rows.
"""

from __future__ import annotations

import logging

from figaroh.calibration._pipeline.estimators._common import identifiable_split
from figaroh.calibration._pipeline.records import EstimationProblem, EstimationResult

logger = logging.getLogger(__name__)

__all__ = ["estimate_structural"]


def estimate_structural(problem: EstimationProblem) -> EstimationResult:
    """The candidates the frames do not absorb (report: None)."""
    names = list(problem.names)
    if len(problem.frames) == len(names):
        return EstimationResult(tuple(names), ())
    x0 = problem.model.initial_vector(names)
    kept, absorbed = identifiable_split(problem, names, x0, problem.settings.absorbed_tol)
    if absorbed:
        logger.info("parameters absorbed by the base/tip frames (dropped): %s", absorbed)
    return EstimationResult(tuple(kept), tuple(absorbed))
