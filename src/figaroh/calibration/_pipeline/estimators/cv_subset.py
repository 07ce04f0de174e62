"""``cv_subset``: the excitation elimination order, subset size by cross-validation.

Every joint parameter is ordered by :func:`~.excitation.excitation_order`
(no stopping ratio); for each tried size ``s`` (``cv_sizes``, default
``0..n_joint``) the ``s`` best-excited joint parameters plus the frames are
scored by k-fold cross-validation. Rule ``min``: the smallest mean held-out
rms (ties: the smaller set); ``one_se``: the smallest set within one
standard error of that minimum.
"""

from __future__ import annotations

from typing import Any, Dict, List

from figaroh.calibration._pipeline.errors import EstimationError
from figaroh.calibration._pipeline.estimators._common import (
    base_report,
    cross_validate,
    finish,
    prefit,
)
from figaroh.calibration._pipeline.estimators.excitation import elimination_order
from figaroh.calibration._pipeline.records import EstimationProblem, EstimationResult

__all__ = ["estimate_cv_subset"]


def _choose(curve: List[Dict[str, Any]], rule: str) -> Dict[str, Any]:
    best = min(curve, key=lambda c: (c["rms"], c["n_joint"]))
    if rule == "one_se":
        limit = best["rms"] + best["se"]
        return min((c for c in curve if c["rms"] <= limit), key=lambda c: c["n_joint"])
    return best


def estimate_cv_subset(problem: EstimationProblem) -> EstimationResult:
    """Identifiable candidates, joint subset size chosen by cross-validation.

    Report keys (after the common ones): ``removal_order``, ``cv_curve``
    (``[{n_joint, rms, se}, …]``), ``cv_rule``, ``n_joint_chosen``.

    Raises:
        EstimationError: a ``cv_sizes`` entry outside ``0..n_joint``, bad folds.
    """
    st = problem.settings
    pre = prefit(problem)
    report = base_report(problem, pre)
    ident = pre.identifiable
    order = elimination_order(problem, ident, pre.jac, pre.noise, None)
    report["removal_order"] = order
    joint_set = set(problem.joint_names)
    n_joint = sum(1 for n in ident if n in joint_set)
    sizes = st.cv_sizes if st.cv_sizes is not None else list(range(n_joint + 1))
    x_map = {**pre.guess, **pre.fitted}
    curve = []
    for s in sizes:
        s = int(s)
        if not 0 <= s <= n_joint:
            raise EstimationError(f"cv_sizes entry {s} is outside 0..{n_joint}")
        removed = {n for n, _ in order[: n_joint - s]}
        names_s = [n for n in ident if n not in removed]
        rms, se = cross_validate(problem, names_s, x_map, None)
        curve.append({"n_joint": s, "rms": rms, "se": se})
    chosen = _choose(curve, st.cv_rule)
    report.update(cv_curve=curve, cv_rule=st.cv_rule, n_joint_chosen=chosen["n_joint"])
    removed = {n for n, _ in order[: n_joint - chosen["n_joint"]]}
    final = [n for n in ident if n not in removed]
    return finish(problem, pre, report, final, None)
