"""Estimation settings, joint-parameter candidates and their Gaussian priors.

``calib_config["estimation"]`` selects how the joint parameters are chosen
and regularised (see :mod:`figaroh.calibration._pipeline.estimators`). The
priors are zero-mean Gaussians on the joint parameters, one standard
deviation per group (defaults: translation 1 mm, rotation 2 mrad, joint
offset 20 mrad, prismatic offset 2 mm); frame parameters never get a prior.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh.calibration._pipeline.errors import EstimationError
from figaroh.calibration._pipeline.estimators import ESTIMATORS, registered
from figaroh.calibration.parameter import BASE_TPL, FULL_PARAMTPL, get_joint_offset

__all__ = [
    "DEFAULTS",
    "METHODS",
    "PRIOR_GROUPS",
    "joint_candidates",
    "prior_group",
    "prior_std",
    "settings",
]

#: The built-in estimation methods (the registry may hold more, see
#: :func:`figaroh.calibration._pipeline.estimators.register`).
METHODS = ("structural", "excitation", "map", "map_cv", "cv_subset")
PRIOR_GROUPS = ("translation", "rotation", "joint_offset", "prismatic_offset")

DEFAULTS: Dict[str, Any] = {
    "method": "structural",
    "priors": {
        "translation": 1e-3,
        "rotation": 2e-3,
        "joint_offset": 2e-2,
        "prismatic_offset": 2e-3,
    },
    "noise_std": None,
    "excitation_k": 1.0,
    "cv_folds": 5,
    "cv_seed": 0,
    "cv_multipliers": [0.1, 0.3, 1.0, 3.0, 10.0],
    "cv_per_group": False,
    "cv_sizes": None,
    "cv_rule": "min",
    "dependency_tol": 1e-7,
}


def _check_priors(v: Any) -> None:
    if not isinstance(v, Mapping):
        raise EstimationError(f"estimation.priors: expected a mapping, got {v!r}")
    unknown = [g for g in v if g not in PRIOR_GROUPS]
    if unknown:
        raise EstimationError(
            f"estimation.priors: unknown prior group(s) {unknown}; use {PRIOR_GROUPS}"
        )
    for g, s in v.items():
        if not (isinstance(s, (int, float)) and s > 0 and math.isfinite(s)):
            raise EstimationError(f"estimation.priors.{g} must be a positive std, got {s!r}")


def settings(calib_config: Mapping[str, Any]) -> Dict[str, Any]:
    """``calib_config["estimation"]`` merged over :data:`DEFAULTS` (priors key-wise).

    Raises:
        EstimationError: a method that is not a registered estimator, unknown
            prior group, bad ``cv_rule``, non-positive prior.
    """
    user = calib_config.get("estimation") or {}
    if not isinstance(user, Mapping):
        raise EstimationError(f"estimation: expected a mapping, got {user!r}")
    out = copy.deepcopy(DEFAULTS)
    for k, v in user.items():
        if k == "priors":
            _check_priors(v)
            out["priors"].update(v)
        else:
            out[k] = v
    if out["method"] not in ESTIMATORS:
        raise EstimationError(
            f"estimation.method: {out['method']!r} is not a registered estimator "
            f"({', '.join(registered())})"
        )
    if out["cv_rule"] not in ("min", "one_se"):
        raise EstimationError(
            f"estimation.cv_rule must be 'min' or 'one_se', got {out['cv_rule']!r}"
        )
    return out


def _axis(model: Any, joint: str) -> Tuple[str, str] | None:
    if not model.existJointName(joint):
        return None
    short = model.joints[model.getJointId(joint)].shortname().replace("JointModel", "")
    if short in ("RUBX", "RUBY", "RUBZ"):
        short = "R" + short[-1]
    if len(short) == 2 and short[0] in "RP" and short[1] in "XYZ":
        return short[0], short[1].lower()
    return None


def joint_candidates(model: Any, calib_config: Mapping[str, Any]) -> List[str]:
    """Joint-parameter candidates of the active joints.

    ``full_params``: the six ``d_*`` names per active joint (joint-major, in
    ``actJoint_idx`` order); ``joint_offset``: one offset name per active
    joint (its first DoF).

    Raises:
        EstimationError: an active joint without a joint-offset parameter.
    """
    names = [str(model.names[j]) for j in calib_config["actJoint_idx"]]
    if calib_config.get("calib_model", "full_params") == "full_params":
        return [f"{t}_{j}" for j in names for t in FULL_PARAMTPL]
    offsets = list(get_joint_offset(model))
    out = []
    for j in names:
        first = next(
            (o for o in offsets if o.endswith("_" + j) and "_" not in o[: -len(j) - 1]), None
        )
        if first is None:
            raise EstimationError(f"joint {j!r} has no joint-offset parameter")
        out.append(first)
    return out


def prior_group(name: str, model: Any) -> str | None:
    """Prior group of a parameter: None for frames, else one of :data:`PRIOR_GROUPS`.

    Raises:
        EstimationError: a name with no prior group (e.g. elastic ``k_*``).
    """
    if name in BASE_TPL or "EE" in name:
        return None
    if name.startswith("d_phi") and len(name) > 6:
        axis, joint = name[5], name[7:]
        ax = _axis(model, joint)
        return "joint_offset" if ax == ("R", axis) else "rotation"
    if name.startswith("d_p") and len(name) > 4:
        axis, joint = name[3], name[5:]
        ax = _axis(model, joint)
        return "prismatic_offset" if ax == ("P", axis) else "translation"
    if name.startswith("offsetP"):
        return "prismatic_offset"
    if name.startswith("offset"):
        return "joint_offset"
    raise EstimationError(f"parameter {name!r} has no prior group (only d_*, offset*, frames)")


def prior_std(names: Sequence[str], model: Any, priors: Mapping[str, float]) -> np.ndarray:
    """Prior standard deviation of each name [m or rad]; ``inf`` for frames."""
    out = np.empty(len(names))
    for i, n in enumerate(names):
        g = prior_group(n, model)
        out[i] = np.inf if g is None else float(priors[g])
    return out
