"""Errors of the calibration pipeline steps."""

from __future__ import annotations

from figaroh.errors import FigarohError

__all__ = ["EstimationError", "UnknownEstimatorError"]


class EstimationError(FigarohError, ValueError):
    """Invalid estimation settings, or an estimation step that cannot run."""


class UnknownEstimatorError(EstimationError):
    """An estimation method name that is not in the estimator registry."""
