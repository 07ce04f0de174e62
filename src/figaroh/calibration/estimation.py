"""Estimation methods of a geometric calibration and the structural lift.

``calib_config["estimation"]["method"]`` selects how the joint parameters
are chosen and regularised:

* ``structural`` (default) — QR selection of base representatives on random
  postures (see :meth:`BaseCalibration.create_param_list`);
* ``excitation`` — every identifiable candidate, then backward elimination
  of the parameter whose posterior std exceeds ``excitation_k`` times its
  prior std the most;
* ``cv_subset`` — the same elimination order, subset size chosen by k-fold
  cross-validation (``min`` or ``one_se`` rule);
* ``map`` — all candidates with Gaussian priors (rows
  ``(σ_noise/σ_prior,i)·θ_i`` appended to the objective);
* ``map_cv`` — ``map`` with the prior scale chosen by cross-validation.

Priors (defaults, merged key-wise): translation 1 mm, rotation 2 mrad,
joint offset 20 mrad, prismatic offset 2 mm. Frame parameters never get a
prior. :func:`lift_structural` maps a structural fit back to every joint
parameter with the minimum prior-weighted norm solution of ``M θ = t``.
"""

from __future__ import annotations

import copy
import logging
import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np
from scipy.optimize import least_squares

from figaroh.calibration import calibration_tools as ct
from figaroh.calibration.calibration_tools import (
    calc_updated_fkm,
    measurement_jacobian,
    select_identifiable_parameters,
)
from figaroh.calibration.parameter import (
    BASE_TPL,
    EE_TPL,
    FULL_PARAMTPL,
    add_pee_name,
    get_fullparam_offset,
    get_joint_offset,
)
from figaroh.errors import FigarohError

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULTS",
    "EstimationError",
    "configure",
    "excitation_order",
    "identifiable",
    "joint_candidates",
    "lift_structural",
    "prior_group",
    "prior_std",
    "settings",
    # Re-exported for figaroh 1.0.2 compatibility.
    "add_pee_name",
    "calc_updated_fkm",
    "get_fullparam_offset",
    "get_joint_offset",
    "measurement_jacobian",
    "select_identifiable_parameters",
]

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


class EstimationError(FigarohError, ValueError):
    """Invalid estimation settings, or an estimation step that cannot run."""


def settings(calib_config: Mapping[str, Any]) -> Dict[str, Any]:
    """``calib_config["estimation"]`` merged over :data:`DEFAULTS` (priors key-wise).

    Raises:
        EstimationError: unknown method, unknown prior group, bad ``cv_rule``,
            non-positive prior.
    """
    user = calib_config.get("estimation") or {}
    if not isinstance(user, Mapping):
        raise EstimationError(f"estimation: expected a mapping, got {user!r}")
    out = copy.deepcopy(DEFAULTS)
    for k, v in user.items():
        if k == "priors":
            if not isinstance(v, Mapping):
                raise EstimationError(f"estimation.priors: expected a mapping, got {v!r}")
            unknown = [g for g in v if g not in PRIOR_GROUPS]
            if unknown:
                raise EstimationError(
                    f"estimation.priors: unknown prior group(s) {unknown}; use {PRIOR_GROUPS}"
                )
            for g, s in v.items():
                if not (isinstance(s, (int, float)) and s > 0 and math.isfinite(s)):
                    raise EstimationError(
                        f"estimation.priors.{g} must be a positive std, got {s!r}"
                    )
            out["priors"].update(v)
        else:
            out[k] = v
    if out["method"] not in METHODS:
        raise EstimationError(f"estimation.method: {out['method']!r} is not one of {METHODS}")
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


# ---------------------------------------------------------------------------
# fitting helpers (use the calibrator's own objective, hence its cost function)
# ---------------------------------------------------------------------------


def _fit(calib, names, x0, prior_weights=None, q=None, pee=None, max_nfev=2000):
    """Least-squares fit of ``names`` (optionally on a subset of postures)."""
    ctx_data = calib._temporary_data(q, pee) if q is not None else _null()
    with ctx_data, calib._temporary_params(names, prior_weights):
        n_rows = len(calib._objective(x0))
        method = "lm" if n_rows >= len(names) else "trf"
        mode = calib._jacobian_mode()
        jac = "2-point" if mode == "2-point" else calib._objective_jacobian
        res = least_squares(calib._objective, x0, jac=jac, method=method, max_nfev=max_nfev)
        n_meas = len(calib.PEE_measured)
        J = res.jac[:n_meas] if res.jac is not None else None
    return res, J


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _score(calib, names, x, q, pee) -> float:
    with calib._temporary_data(q, pee), calib._temporary_params(names, None):
        r = np.asarray(calib.cost_function(x), dtype=float)[: len(pee)]
    return float(np.sqrt(np.mean(r**2)))


def _folds(n: int, k: int, seed: int) -> List[np.ndarray]:
    if not 2 <= k <= n:
        raise EstimationError(
            f"cv_folds must be between 2 and the number of postures ({n}), got {k}"
        )
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(c) for c in np.array_split(perm, k)]


def _split(calib, idx: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    N = calib.n_samples
    rows = np.arange(len(calib.PEE_measured))
    keep = np.isin(rows % N, idx)
    return calib.q_measured[:N][idx], calib.PEE_measured[keep]


def _cv(calib, names, x0_map, prior_weights, st) -> Tuple[float, float]:
    N = calib.n_samples
    folds = _folds(N, int(st["cv_folds"]), int(st["cv_seed"]))
    rms = []
    for test in folds:
        train = np.setdiff1d(np.arange(N), test)
        qa, pa = _split(calib, train)
        qb, pb = _split(calib, test)
        x0 = np.array([x0_map.get(n, 0.0) for n in names])
        res, _ = _fit(calib, names, x0, prior_weights, qa, pa)
        rms.append(_score(calib, names, res.x, qb, pb))
    rms = np.asarray(rms)
    se = float(np.std(rms, ddof=1) / np.sqrt(len(rms))) if len(rms) > 1 else 0.0
    return float(np.mean(rms)), se


def excitation_order(
    J: np.ndarray,
    names: Sequence[str],
    frames: Sequence[str],
    prior: Sequence[float],
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


def identifiable(
    calib: Any, names: Sequence[str], frames: Sequence[str], tol: float
) -> Tuple[List[str], List[str]]:
    """Split ``names`` into identifiable and dependent parameters on the loaded postures.

    The measurement Jacobian (:func:`calibration_tools.measurement_jacobian`
    of the predicted measurements) is evaluated at the calibrator's initial
    vector for ``names`` (closed-form frames, joint parameters 0) and scanned
    by :func:`calibration_tools.select_identifiable_parameters` with
    ``frames`` always kept.

    Args:
        calib: A ``BaseCalibration`` with its data loaded.
        names: Candidate parameter names (the parameter vector layout).
        frames: Names always kept (base and tip frames).
        tol: Threshold on the residual norm of a unit column.

    Returns:
        ``(kept, dependent)``, both in ``names`` order.

    Raises:
        EstimationError: the data are not loaded.
    """
    if calib.PEE_measured is None or calib.q_measured is None:
        raise EstimationError("identifiable: load the data before selecting parameters")
    with calib._temporary_params(list(names), None):
        x0 = calib._initial_vector()
        J = calib._identifiability_jacobian(x0)
    return ct.select_identifiable_parameters(J, list(names), always_keep=frames, tol=float(tol))


def configure(calib: Any) -> Dict[str, Any]:
    """Set ``param_name`` (and priors) for a non-structural method.

    Args:
        calib: A ``BaseCalibration`` with its data loaded.

    Returns:
        The estimation report (also in ``calib_config["estimation_report"]``).

    Raises:
        EstimationError: ``non_geom`` set, data not loaded, too few
            measurement rows for the noise estimate, bad CV settings.
    """
    cfg = calib.calib_config
    st = settings(cfg)
    method = st["method"]
    if cfg.get("non_geom"):
        raise EstimationError(
            f"estimation.method {method!r} does not support include_non_geometric; use structural"
        )
    if calib.PEE_measured is None or calib.q_measured is None:
        raise EstimationError(
            f"estimation.method {method!r} needs the measurements: load the data before "
            "create_param_list()"
        )
    model = calib.model
    cands = joint_candidates(model, cfg)
    K = int(cfg["NbMarkers"])
    mask = list(cfg["measurability"])
    base = [] if cfg.get("known_baseframe", False) else list(BASE_TPL)
    tips = (
        []
        if cfg.get("known_tipframe", False)
        else [f"{t}_{k}" for k in range(1, K + 1) for j, t in enumerate(EE_TPL) if mask[j]]
    )
    canonical = base + cands + tips
    for k in [k for k in cfg if k.startswith("base_mapping")]:
        del cfg[k]
    cfg["param_name"] = list(canonical)
    cfg["prior_weights"] = None
    cfg["prior_noise"] = None
    calib._layout_cache = None
    frames = base + tips
    x_guess = calib._initial_vector()
    guess = dict(zip(canonical, x_guess, strict=True))
    ident, dependent = identifiable(calib, canonical, frames, float(st["dependency_tol"]))
    x0 = np.array([guess[n] for n in ident])
    pre, Jpre = _fit(calib, ident, x0)
    m = len(calib.PEE_measured)
    if st["noise_std"] is not None:
        noise, source = float(st["noise_std"]), "given"
    else:
        if m <= len(ident):
            raise EstimationError(
                f"{m} measurement rows for {len(ident)} identifiable parameters: cannot estimate "
                "the noise; give estimation.noise_std or collect more postures"
            )
        r = np.asarray(pre.fun, dtype=float)[:m]
        noise, source = float(np.sqrt(np.sum(r**2) / (m - len(ident)))), "estimated"
    priors = dict(st["priors"])
    report: Dict[str, Any] = {
        "method": method,
        "candidates": list(cands),
        "dependent": list(dependent),
        "noise_std": noise,
        "noise_source": source,
        "priors": priors,
    }
    joint_set = set(cands)
    fit_map = dict(zip(ident, pre.x, strict=True))

    def weights(names, scale: Mapping[str, float] | float = 1.0) -> np.ndarray:
        w = np.zeros(len(names))
        for i, n in enumerate(names):
            g = prior_group(n, model)
            if g is None:
                continue
            s = scale if isinstance(scale, (int, float)) else scale.get(g, 1.0)
            w[i] = noise / (priors[g] * s)
        return w

    final_names: List[str]
    prior_w = None
    if method in ("excitation", "cv_subset"):
        pstd = prior_std(ident, model, priors)
        k_stop = float(st["excitation_k"]) if method == "excitation" else None
        frame_names = [n for n in ident if n not in joint_set]
        order = excitation_order(Jpre, ident, frame_names, pstd, noise, k_stop)
        report["removal_order"] = order
        if method == "excitation":
            report["excitation_k"] = float(st["excitation_k"])
            removed = {n for n, _ in order}
            final_names = [n for n in ident if n not in removed]
        else:
            n_joint = sum(1 for n in ident if n in joint_set)
            sizes = st["cv_sizes"] if st["cv_sizes"] is not None else list(range(n_joint + 1))
            curve = []
            for s in sizes:
                s = int(s)
                if not 0 <= s <= n_joint:
                    raise EstimationError(f"cv_sizes entry {s} is outside 0..{n_joint}")
                removed = {n for n, _ in order[: n_joint - s]}
                names_s = [n for n in ident if n not in removed]
                rms, se = _cv(calib, names_s, {**guess, **fit_map}, None, st)
                curve.append({"n_joint": s, "rms": rms, "se": se})
            best = min(curve, key=lambda c: (c["rms"], c["n_joint"]))
            if st["cv_rule"] == "one_se":
                limit = best["rms"] + best["se"]
                chosen = min((c for c in curve if c["rms"] <= limit), key=lambda c: c["n_joint"])
            else:
                chosen = best
            report.update(cv_curve=curve, cv_rule=st["cv_rule"], n_joint_chosen=chosen["n_joint"])
            removed = {n for n, _ in order[: n_joint - chosen["n_joint"]]}
            final_names = [n for n in ident if n not in removed]
    elif method == "map":
        final_names = list(canonical)
        prior_w = weights(final_names)
    else:  # map_cv
        final_names = list(canonical)
        x_map = {**guess, **fit_map}
        mults = [float(v) for v in st["cv_multipliers"]]
        curve = []
        if st["cv_per_group"]:
            groups = sorted({prior_group(n, model) for n in final_names} - {None})
            scale = {g: 1.0 for g in groups}
            for _ in range(2):
                for g in groups:
                    results = []
                    for mlt in mults:
                        trial = {**scale, g: mlt}
                        rms, se = _cv(calib, final_names, x_map, weights(final_names, trial), st)
                        curve.append({"scale": dict(trial), "rms": rms, "se": se})
                        results.append((rms, mlt))
                    scale[g] = min(results)[1]
        else:
            results = []
            for mlt in mults:
                rms, se = _cv(calib, final_names, x_map, weights(final_names, mlt), st)
                groups = sorted({prior_group(n, model) for n in final_names} - {None})
                curve.append({"scale": {g: mlt for g in groups}, "rms": rms, "se": se})
                results.append((rms, mlt))
            best = min(results)[1]
            scale = {g: best for g in sorted({prior_group(n, model) for n in final_names} - {None})}
        report["prior_scale"] = dict(scale)
        report["cv_curve"] = curve
        prior_w = weights(final_names, scale)
    final_names = [n for n in canonical if n in set(final_names)]
    if prior_w is not None:
        w_map = dict(zip([n for n in canonical if n in set(final_names)], prior_w, strict=False))
        prior_w = np.array([w_map[n] for n in final_names])
    cfg["param_name"] = final_names
    cfg["prior_weights"] = prior_w
    cfg["prior_noise"] = noise if prior_w is not None else None
    cfg["absorbed_param_name"] = list(dependent)
    report["param_name"] = list(final_names)
    cfg["estimation_report"] = report
    calib.estimation_report = report
    calib._layout_cache = None
    calib.nvars = len(final_names)
    logger.info(
        "estimation %s: %d parameters (%d dependent candidates)",
        method,
        len(final_names),
        len(dependent),
    )
    return report


def lift_structural(
    calib: Any, priors: Mapping[str, float] | None = None, refine_iterations: int = 3
) -> Tuple[List[str], np.ndarray, np.ndarray]:
    """Lift a structural fit back to every mapped joint parameter.

    ``θ = G t`` with ``G = P Mᵀ (M P Mᵀ)⁻¹`` (minimum ``P⁻¹``-norm solution
    of ``M θ = t``, ``P = diag(prior_std²)``), ``t`` the fitted base
    representatives (0 for dropped rows and base-frame rows), then
    ``refine_iterations`` Gauss–Newton steps (analytic Jacobian, step scaled by
    the prior stds) so that the lifted model reproduces the fitted
    predictions at the measured postures.

    Returns:
        ``(names, θ, cov)``: ``base_mapping_param_names``, lifted values [m,
        rad] and their covariance ``G C Gᵀ`` (fitted rows only).

    Raises:
        EstimationError: no structural mapping or no fit.
    """
    cfg = calib.calib_config
    if "base_mapping_matrix_full" not in cfg or calib.var_ is None:
        raise EstimationError("lift_structural needs a structural create_param_list() and a fit")
    names = list(cfg["base_mapping_param_names"])
    M = np.asarray(cfg["base_mapping_matrix_full"], dtype=float)
    rows = list(cfg["base_mapping_row_names_full"])
    frame_rows = set(cfg.get("base_frame_row_names", []))
    pr = dict(settings(cfg)["priors"])
    if priors:
        pr.update(priors)
    s = prior_std(names, calib.model, pr)
    P = np.diag(s**2)
    pnames = list(cfg["param_name"])
    x = np.asarray(calib.var_, dtype=float)
    t = np.zeros(len(rows))
    fitted_rows = []
    for i, rn in enumerate(rows):
        if rn in frame_rows or rn not in pnames:
            continue
        t[i] = x[pnames.index(rn)]
        fitted_rows.append((i, pnames.index(rn)))
    G = P @ M.T @ np.linalg.inv(M @ P @ M.T)
    theta = G @ t
    C = np.zeros((len(rows), len(rows)))
    if calib._C_param is not None:
        for a, pa in fitted_rows:
            for b, pb in fitted_rows:
                C[a, b] = calib._C_param[pa, pb]
    cov = G @ C @ G.T
    frames = ct.frame_names(pnames)
    nonframe = [n for n in pnames if n not in frames]
    if (
        refine_iterations > 0
        and calib.q_measured is not None
        and all(n.startswith(("d_", "offset")) for n in nonframe)
    ):
        q = calib.q_measured[: calib.n_samples]
        fcfg = dict(cfg)
        fcfg["NbSample"] = len(q)
        target = ct.calc_updated_fkm(calib.model, calib.data, x, q, fcfg)
        lcfg = dict(fcfg)
        lcfg["param_name"] = frames + names
        fvals = [x[pnames.index(f)] for f in frames]
        for _ in range(int(refine_iterations)):
            var = np.concatenate([fvals, theta])
            r = ct.calc_updated_fkm(calib.model, calib.data, var, q, lcfg) - target
            J = ct.measurement_jacobian(calib.model, calib.data, var, q, lcfg)[:, len(frames) :]
            delta = np.linalg.lstsq(J * s[None, :], r, rcond=1e-6)[0]
            theta = theta - s * delta
    return names, theta, cov
