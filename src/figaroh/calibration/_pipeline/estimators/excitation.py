"""``excitation``: backward elimination of the weakly excited joint parameters.

Start from every identifiable candidate (see
:func:`~figaroh.calibration._pipeline.estimators._common.prefit`), then
remove, one at a time, the joint parameter whose posterior standard
deviation exceeds ``excitation_k`` times its prior standard deviation the
most (:func:`excitation_order`). No prior rows are added to the fit.
"""

from __future__ import annotations

import math
from typing import List, Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike

from figaroh.calibration._pipeline.errors import EstimationError
from figaroh.calibration._pipeline.estimators._common import base_report, finish, prefit
from figaroh.calibration._pipeline.records import EstimationProblem, EstimationResult

__all__ = ["estimate_excitation", "excitation_order", "prior_stds"]


def excitation_order(
    J: np.ndarray,
    names: Sequence[str],
    frames: Sequence[str],
    prior: ArrayLike,
    noise: float,
    k: float | None = None,
) -> List[Tuple[str, float]]:
    """Backward elimination order of the joint parameters by excitation.

    With the active columns ``J_a``, ``C = noise²·pinv(J_aᵀ J_a)`` and, for
    every active joint parameter (a name not in ``frames``),
    ``ratio_i = sqrt|C_ii| / prior_i`` (posterior over prior standard
    deviation: > 1 means the data constrain it less than the prior does).
    The parameter with the largest ratio (ties: the earliest) is removed
    and the step repeated; with ``k`` the elimination stops as soon as the
    largest ratio is ``≤ k``, without it every joint parameter is ordered.

    Args:
        J: (m, n) measurement Jacobian, columns in ``names`` order [m or rad per unit].
        names: Parameter names.
        frames: Names never removed (base and tip frames).
        prior: (n,) prior standard deviations in parameter units (frames: any value).
        noise: Measurement noise standard deviation [m or rad].
        k: Stopping ratio, or None to order every joint parameter.

    Returns:
        ``[(name, ratio), …]`` in removal order.

    Raises:
        ValueError: ``J`` columns, ``names`` and ``prior`` do not match.
    """
    J = np.asarray(J, dtype=float)
    names = list(names)
    prior = np.asarray(prior, dtype=float).ravel()
    if J.ndim != 2 or J.shape[1] != len(names) or prior.size != len(names):
        raise ValueError(
            f"excitation_order: J {J.shape}, {len(names)} names and {prior.size} priors differ"
        )
    frame_set = set(frames)
    active = list(range(len(names)))
    order: List[Tuple[str, float]] = []
    while True:
        joints = [i for i in active if names[i] not in frame_set]
        if not joints:
            break
        Ja = J[:, active]
        cov = noise**2 * np.linalg.pinv(Ja.T @ Ja)
        ratios = {
            i: math.sqrt(abs(cov[active.index(i), active.index(i)])) / prior[i] for i in joints
        }
        worst = max(joints, key=lambda i: (ratios[i], -i))
        if k is not None and ratios[worst] <= k:
            break
        order.append((names[worst], float(ratios[worst])))
        active.remove(worst)
    return order


def prior_stds(problem: EstimationProblem, names: Sequence[str]) -> np.ndarray:
    """Prior standard deviation of each name [m or rad]; ``inf`` for frames."""
    out = np.empty(len(names))
    for i, n in enumerate(names):
        g = problem.prior_groups[n]
        out[i] = np.inf if g is None else float(problem.settings.priors[g])
    return out


def elimination_order(
    problem: EstimationProblem,
    names: Sequence[str],
    jac: np.ndarray | None,
    noise: float,
    k: float | None,
) -> List[Tuple[str, float]]:
    """:func:`excitation_order` of the identifiable candidates (frames kept).

    Raises:
        EstimationError: the pre-fit gave no Jacobian (``jac`` is None).
    """
    if jac is None:
        raise EstimationError(
            "the pre-fit returned no measurement Jacobian: the excitation order needs it "
            "(ResidualModel.fit must return FitOutcome.jac)"
        )
    joint_set = set(problem.joint_names)
    frame_names = [n for n in names if n not in joint_set]
    return excitation_order(jac, names, frame_names, prior_stds(problem, names), noise, k)


def estimate_excitation(problem: EstimationProblem) -> EstimationResult:
    """Identifiable candidates minus those removed by :func:`excitation_order`.

    Report keys (after the common ones): ``removal_order`` (``[(name,
    ratio), …]``) and ``excitation_k``.
    """
    pre = prefit(problem)
    report = base_report(problem, pre)
    k = float(problem.settings.excitation_k)
    order = elimination_order(problem, pre.identifiable, pre.jac, pre.noise, k)
    report["removal_order"] = order
    report["excitation_k"] = k
    removed = {n for n, _ in order}
    final = [n for n in pre.identifiable if n not in removed]
    return finish(problem, pre, report, final, None)
