"""Reconstruction of full (standard) parameters from identified base parameters.

The base parameters ``φ = M θ_r`` determine ``θ_r`` (the parameters that
survived column elimination, ordered as ``params_r``) only up to the null
space of ``M``. Two reconstructions pick one representative:

* ``nullspace`` — the weighted projection of a prior ``θ0`` onto
  ``{θ : M θ = φ}``: ``min (θ − θ0)ᵀ W (θ − θ0)`` s.t. ``M θ = φ``, i.e.
  ``λ = (M W⁻¹ Mᵀ)⁻¹ (M θ0 − φ)``, ``θ = θ0 − W⁻¹ Mᵀ λ``. Closed form, no
  physical guarantee.
* ``sdp`` — the closest-to-prior θ with ``M θ = φ`` **and** every link
  physically consistent (pseudo-inertia LMI ``P(θ_link) ⪰ 0``,
  ``m ≥ mass_min``, optional CAD bounds). Infeasible when no physically
  consistent parameter set reproduces ``φ``.

Inertial conventions: see :mod:`figaroh.identification.physical_consistency`.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple, Union, cast

import numpy as np

from figaroh.identification import _conic
from figaroh.identification.cad_constraints import apply_cad_constraints_to_problem
from figaroh.identification.physical_consistency import (
    INERTIAL_KEYS,
    check_p10_feasibility,
    lmi_margin,
    project_robot_p10_lmi,
    pseudo_inertia_vec_map,
)
from figaroh.utils.yaml_budget import load_yaml_file

logger = logging.getLogger(__name__)

__all__ = [
    "BaseResult",
    "ReconstructionResult",
    "prior_vector_from_dict",
    "reconstruct_from_base",
    "reconstruct_full_parameters",
    "reconstruct_theta_r",
    "run_option_a_reconstruction",
    "run_reconstruction",
]

_INERTIAL_KEYS = list(INERTIAL_KEYS)
_METHODS = ("nullspace", "sdp", "auto")


@dataclass(frozen=True)
class ReconstructionResult:
    """A reconstructed parameter vector.

    Attributes:
        theta_r: Values over ``params_r`` (SI units).
        params_r: Parameter names.
        residual: ``M θ_r − φ_base``.
        status: ``ok``, ``solver_missing`` (SDP back-end not installed, the
            nullspace solution is returned) or ``error`` (SDP failed, the
            nullspace solution is returned).
        base_residual_norm: ``‖M θ_r − φ_base‖``.
        objective: SDP objective ``‖diag(w)(θ − θ0)‖²`` (successful SDP only).
        effective_method: Method that actually produced ``theta_r``
            (``"sdp"`` or ``"nullspace"``).
    """

    theta_r: np.ndarray
    params_r: List[str]
    residual: np.ndarray
    status: str = "ok"
    base_residual_norm: float | None = None
    objective: float | None = None
    effective_method: str | None = None

    def as_dict(self) -> Dict[str, float]:
        """``{name: value}`` of the reconstruction."""
        return {n: float(v) for n, v in zip(self.params_r, self.theta_r, strict=True)}

    def __repr__(self) -> str:
        return (
            f"ReconstructionResult(status={self.status!r}, "
            f"effective_method={self.effective_method!r}, n={len(self.params_r)}, "
            f"base_residual_norm={self.base_residual_norm!r})"
        )


@dataclass(frozen=True)
class BaseResult:
    """Base-parameter fit handed to :func:`reconstruct_full_parameters`.

    Attributes:
        M: (r, n) mapping ``φ = M θ_r``.
        phi_base: (r,) base parameters.
        params_r: n parameter names (columns of ``M``).
        phi_base_dict: Optional ``{expression: value}``.
    """

    M: np.ndarray
    phi_base: np.ndarray
    params_r: List[str]
    phi_base_dict: Dict[str, float] | None = None


# ---------------------------------------------------------------------------
# Priors
# ---------------------------------------------------------------------------
def prior_vector_from_dict(
    params_r: Sequence[str], params_std: Mapping[str, Any] | None, *, default: float = 0.0
) -> np.ndarray:
    """Prior over ``params_r`` from ``{name: value}`` (``default`` for absent names)."""
    src = params_std or {}
    return np.array([float(src.get(n, default)) for n in params_r], dtype=float)


def _load_prior_from_urdf(model: Any, params_r: Sequence[str], default: float = 0.0) -> np.ndarray:
    """Prior from the model's link inertias, in the identification convention.

    ``m``, ``h = m·c`` and the inertia **about the joint-frame origin**
    (``Inertia.toDynamicParameters()``), i.e. the same origin-based tensor as
    the regressor. (Upstream read the tensor about the CoM here, which mixed
    conventions.) Names that are not ``<key>_<joint>`` get ``default``.
    """
    values: Dict[str, float] = {}
    for jid in range(1, model.njoints):
        p10 = np.asarray(model.inertias[jid].toDynamicParameters(), dtype=float)
        for key, v in zip(_INERTIAL_KEYS, p10, strict=True):
            values[f"{key}_{model.names[jid]}"] = float(v)
    return prior_vector_from_dict(params_r, values, default=default)


def _load_prior_from_yaml(path: Any, params_r: Sequence[str], default: float = 0.0) -> np.ndarray:
    """Prior from a YAML file holding a top-level ``{name: number}`` mapping.

    Raises:
        FileNotFoundError: missing file.
        ValueError: not a mapping of numbers.
    """
    data = load_yaml_file(path)
    if not isinstance(data, Mapping):
        raise ValueError(f"prior YAML {path} must hold a mapping name -> value")
    bad = [k for k, v in data.items() if not isinstance(v, (int, float)) or isinstance(v, bool)]
    if bad:
        raise ValueError(f"prior YAML {path}: non-numeric values for {bad[:6]}")
    return prior_vector_from_dict(
        params_r, {str(k): float(v) for k, v in data.items()}, default=default
    )


# ---------------------------------------------------------------------------
# Nullspace reconstruction
# ---------------------------------------------------------------------------
def reconstruct_theta_r(
    M: Any,
    phi_base: Any,
    *,
    theta0: Any = None,
    weights: Any = None,
    rcond: float = 1e-12,
) -> Tuple[np.ndarray, np.ndarray]:
    """Weighted projection of ``theta0`` onto ``{θ : M θ = φ}``.

    ``λ = (M W⁻¹ Mᵀ)⁻¹ (M θ0 − φ)`` (``lstsq`` with ``rcond`` when singular),
    ``θ = θ0 − W⁻¹ Mᵀ λ`` with ``W = diag(weights)``: a larger weight keeps a
    coordinate closer to its prior.

    Args:
        M: (r, n) base mapping.
        phi_base: (r,) base parameters.
        theta0: (n,) prior (default zeros).
        weights: (n,) positive weights (default ones).
        rcond: Cut-off of the singular fallback.

    Returns:
        ``(theta, residual)`` with ``residual = M θ − φ``.

    Raises:
        ValueError: ``M`` not 2-D, wrong shapes, non-finite input or
            non-positive weights.
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 2:
        raise ValueError(f"M must be a 2-D array, got shape {M.shape}")
    r, n = M.shape
    phi = np.asarray(phi_base, dtype=float)
    if phi.shape != (r,):
        raise ValueError(f"phi_base must have shape ({r},), got {phi.shape}")
    theta0 = np.zeros(n) if theta0 is None else np.asarray(theta0, dtype=float)
    if theta0.shape != (n,):
        raise ValueError(f"theta0 must have shape ({n},), got {theta0.shape}")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},), got {w.shape}")
    if np.any(~np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be positive and finite")
    for name, arr in (("M", M), ("phi_base", phi), ("theta0", theta0)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN/inf")
    winv = 1.0 / w
    A = (M * winv[None, :]) @ M.T
    rhs = M @ theta0 - phi
    try:
        lam = np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        lam = np.linalg.lstsq(A, rhs, rcond=rcond)[0]
    theta = theta0 - winv * (M.T @ lam)
    return theta, M @ theta - phi


def reconstruct_from_base(
    M: Any,
    phi_base: Any,
    params_r: Sequence[str],
    *,
    params_std_prior: Mapping[str, Any] | None = None,
    default_prior: float = 0.0,
    weights: Any = None,
) -> ReconstructionResult:
    """Nullspace reconstruction (:func:`reconstruct_theta_r`) with a named prior.

    Args:
        M: (r, n) base mapping ``φ = M θ_r``.
        phi_base: (r,) identified base parameters.
        params_r: The n names of ``θ_r`` (columns of ``M``).
        params_std_prior: ``{name: value}`` prior (e.g. the nominal standard
            parameters).
        default_prior: Prior of the names absent from ``params_std_prior``.
        weights: (n,) positive weights ``W`` of ``(θ − θ0)ᵀ W (θ − θ0)``.

    Returns:
        :class:`ReconstructionResult` with status ``ok`` and
        ``effective_method="nullspace"``.
    """
    params_r = list(params_r)
    theta0 = prior_vector_from_dict(params_r, params_std_prior, default=default_prior)
    theta, res = reconstruct_theta_r(M, phi_base, theta0=theta0, weights=weights)
    return ReconstructionResult(
        theta_r=theta,
        params_r=params_r,
        residual=res,
        status="ok",
        base_residual_norm=float(np.linalg.norm(res)),
        effective_method="nullspace",
    )


# ---------------------------------------------------------------------------
# SDP reconstruction
# ---------------------------------------------------------------------------
def _p10_indices_for_joints(
    params_r: Sequence[str], joint_names: Sequence[str]
) -> Dict[str, Dict[str, int]]:
    """``{joint: {key: index}}`` for joints whose ten inertial keys are all in ``params_r``."""
    index = {n: i for i, n in enumerate(params_r)}
    out: Dict[str, Dict[str, int]] = {}
    for joint in joint_names:
        names = [f"{k}_{joint}" for k in _INERTIAL_KEYS]
        if all(n in index for n in names):
            out[joint] = {k: index[n] for k, n in zip(_INERTIAL_KEYS, names, strict=True)}
    return out


def _link_lmi_rows(
    params_r: Sequence[str],
    joint_names: Sequence[str],
    fixed: Mapping[str, float] | None,
) -> List[Tuple[str, List[int | None], np.ndarray]]:
    """Per link: the θ index of each p10 entry (None = fixed) and the fixed values.

    Complete links have ten indices. With ``fixed``, a partial link (some keys
    in ``params_r``, the others given in ``fixed``) is included too, so its
    mixed reconstructed/nominal p10 is constrained as a whole.
    """
    index = {n: i for i, n in enumerate(params_r)}
    out = []
    for joint in joint_names:
        idx: List[int | None] = []
        const = np.zeros(10)
        ok = True
        for k, key in enumerate(_INERTIAL_KEYS):
            name = f"{key}_{joint}"
            if name in index:
                idx.append(index[name])
            elif fixed is not None and name in fixed:
                idx.append(None)
                const[k] = float(fixed[name])
            else:
                ok = False
                break
        if ok and any(i is not None for i in idx):
            out.append((joint, idx, const))
    return out


def _reconstruct_sdp(
    M: Any,
    phi: Any,
    params_r: Sequence[str],
    *,
    theta0: Any,
    w: Any,
    joint_names: Sequence[str],
    mass_min: float = 1e-6,
    psd_eig_tol: float = -1e-10,
    solver: str = "cvxopt",
    max_seconds: float | None = None,
    cad_constraints: Any = None,
    fixed: Mapping[str, float] | None = None,
) -> Tuple[np.ndarray, float]:
    """Closest-to-prior physically consistent θ reproducing the base parameters.

    ``min ‖d‖²`` with ``d = diag(w)(θ − θ0)`` subject to ``M θ = φ`` and, per
    link, ``m ≥ mass_min`` and ``P(θ_link) ⪰ 0``, plus CAD bounds. Solved in
    the scaled variable ``z = d`` (``θ = θ0 + diag(1/w) z``), minimising
    ``‖z‖`` (same minimiser as the Schur-complement form
    ``min t s.t. [[t, dᵀ], [d, I]] ⪰ 0``, with a small second-order cone in
    place of an (n+1)×(n+1) LMI).

    Args:
        M, phi, params_r: Base mapping (r, n), base values (r,), names (n).
        theta0: (n,) prior.
        w: (n,) positive weights.
        joint_names: Links to constrain (complete ones, see ``fixed``).
        mass_min: Mass lower bound [kg].
        psd_eig_tol: Unused by the solve (kept for the signature; acceptance
            is judged by the caller).
        solver: ``"cvxopt"`` (PICOS) or ``"clarabel"``.
        max_seconds: Time limit [s].
        cad_constraints: Optional CAD bounds.
        fixed: ``{name: value}`` for inertial entries not in ``params_r``
            (partial links then get their LMI too).

    Returns:
        ``(theta, t)`` with ``t = ‖d‖²``.

    Raises:
        ImportError: solver package missing.
        RuntimeError: the solver found no optimal solution (e.g. infeasible).
    """

    M = np.asarray(M, dtype=float)
    phi = np.asarray(phi, dtype=float).reshape(-1)
    params_r = list(params_r)
    n = len(params_r)
    theta0 = np.asarray(theta0, dtype=float).reshape(n)
    w = np.asarray(w, dtype=float).reshape(n)
    if np.any(~np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be positive and finite")
    D = 1.0 / w
    prog = _conic.ConeProgram(n=n, objective="norm", F=np.eye(n), g=np.zeros(n))
    prog.add_equalities(M * D[None, :], phi - M @ theta0)
    Lp = pseudo_inertia_vec_map()
    for _joint, idx, const in _link_lmi_rows(params_r, joint_names, fixed):
        S = np.zeros((10, n))
        base = const.copy()
        for k, i in enumerate(idx):
            if i is not None:
                S[k, i] = D[i]
                base[k] = theta0[i]
        P0 = (Lp @ base).reshape(4, 4, order="F")
        prog.add_lmi(Lp @ S, P0 - lmi_margin(P0) * np.eye(4))  # P(θ) ⪰ δ·I
        if idx[0] is not None:
            row = np.zeros(n)
            row[idx[0]] = -D[idx[0]]
            prog.add_inequalities(row[None, :], [theta0[idx[0]] - mass_min])
    apply_cad_constraints_to_problem(prog, (np.diag(D), theta0), params_r, cad_constraints)
    res = _conic.solve_program(prog, solver=solver, max_seconds=max_seconds)
    if res.status != "optimal" or res.x is None:
        raise RuntimeError(
            f"SDP reconstruction found no optimal solution ({solver}: {res.status}); "
            "no physically consistent parameter set reproduces the base parameters"
        )
    z = res.x
    return theta0 + D * z, float(z @ z)


def _base_triplet(base_result: Any) -> Tuple[np.ndarray, np.ndarray, List[str]]:
    """``(M, φ, params_r)`` of a :class:`BaseResult` or a tuple, shapes checked.

    Raises:
        ValueError: Not a BaseResult / triplet, or ``M`` columns ≠ ``len(params_r)``.
    """
    if isinstance(base_result, BaseResult):
        M, phi, params_r = base_result.M, base_result.phi_base, list(base_result.params_r)
    else:
        try:
            M, phi, params_r = base_result
        except (TypeError, ValueError) as exc:
            raise ValueError(
                "base_result must be a BaseResult or a (M, phi, params_r) tuple"
            ) from exc
        params_r = list(params_r)
    M = np.asarray(M, dtype=float)
    phi = np.asarray(phi, dtype=float).reshape(-1)
    if M.ndim != 2 or M.shape[1] != len(params_r):
        raise ValueError(f"M has shape {M.shape} but params_r has {len(params_r)} names")
    return M, phi, params_r


def _prior_vector(
    theta0: Any,
    params_r: List[str],
    prior_source: str,
    params_std_prior: Mapping[str, Any] | None,
    model: Any,
    prior_yaml_path: str | None,
) -> np.ndarray:
    """The prior ``θ0`` over ``params_r``: explicit, or from a dict, the URDF or a YAML file.

    Raises:
        ValueError: Wrong ``theta0`` shape, unknown source or missing input.
    """
    if theta0 is not None:
        prior = np.asarray(theta0, dtype=float).reshape(-1)
        if prior.shape != (len(params_r),):
            raise ValueError(f"theta0 must have shape ({len(params_r)},), got {prior.shape}")
        return prior
    src = str(prior_source).strip().lower()
    if src == "dict":
        return prior_vector_from_dict(params_r, params_std_prior)
    if src == "urdf":
        if model is None:
            raise ValueError("prior_source='urdf' needs model=")
        return _load_prior_from_urdf(model, params_r)
    if src == "yaml":
        if not prior_yaml_path:
            raise ValueError("prior_source='yaml' needs prior_yaml_path=")
        return _load_prior_from_yaml(prior_yaml_path, params_r)
    raise ValueError(f"prior_source must be 'dict', 'urdf' or 'yaml', got {prior_source!r}")


def _fixed_values(
    params_std_prior: Mapping[str, Any] | None, model: Any
) -> Dict[str, float] | None:
    """Values of the entries the SDP keeps fixed (the prior dict, else the model's inertias)."""
    if params_std_prior is not None:
        return {str(k): float(v) for k, v in params_std_prior.items()}
    if model is None:
        return None
    fixed: Dict[str, float] = {}
    for jid in range(1, model.njoints):
        p10 = model.inertias[jid].toDynamicParameters()
        for key, v in zip(_INERTIAL_KEYS, p10, strict=True):
            fixed[f"{key}_{model.names[jid]}"] = float(v)
    return fixed


def _effective_method(m: str, joint_names: Sequence[str] | None, solver: str) -> str:
    """Resolve ``auto`` (``sdp`` when its solver imports and links are named).

    Raises:
        ValueError: ``sdp`` without ``joint_names``.
    """
    if m == "auto":
        m = "nullspace"
        if joint_names is not None:
            try:
                if str(solver).lower() in _conic.available_solvers():
                    m = "sdp"
            except ImportError:  # pragma: no cover
                pass
    if m == "sdp" and joint_names is None:
        raise ValueError("method='sdp' needs joint_names= (the links to constrain)")
    return m


def reconstruct_full_parameters(
    base_result: Union[BaseResult, Tuple[Any, Any, Sequence[str]]],
    *,
    method: str = "nullspace",
    theta0: Any = None,
    params_std_prior: Mapping[str, Any] | None = None,
    prior_source: str = "dict",
    prior_yaml_path: str | None = None,
    model: Any = None,
    weights: Any = None,
    joint_names: Sequence[str] | None = None,
    mass_min: float = 1e-6,
    psd_eig_tol: float = -1e-10,
    solver: str = "cvxopt",
    max_seconds: float | None = None,
    cad_constraints: Any = None,
) -> ReconstructionResult:
    """Reconstruct ``θ_r`` from base parameters with the requested method.

    Args:
        base_result: :class:`BaseResult` or ``(M, φ, params_r)``.
        method: ``"nullspace"``, ``"sdp"`` or ``"auto"`` (``sdp`` when its
            solver stack imports and ``joint_names`` is given, else
            ``nullspace``); case and surrounding spaces are ignored.
        theta0: Explicit prior over ``params_r`` (wins over ``prior_source``).
        params_std_prior: ``{name: value}`` prior (``prior_source="dict"``);
            also supplies the fixed entries of partially identified links in
            the SDP.
        prior_source: ``"dict"``, ``"urdf"`` (needs ``model``) or ``"yaml"``
            (needs ``prior_yaml_path``).
        prior_yaml_path: YAML prior file.
        model: Pinocchio model (``urdf`` prior).
        weights: (n,) positive weights ``w`` (default ones): both methods
            minimise ``‖diag(w)(θ − θ0)‖²`` (the closed form is called with
            ``W = w²``).
        joint_names: Links constrained by the SDP (required by ``sdp``).
        mass_min: Mass lower bound [kg] (SDP).
        psd_eig_tol: Eigenvalue tolerance (SDP bookkeeping).
        solver: ``"cvxopt"`` or ``"clarabel"``.
        max_seconds: SDP time limit [s].
        cad_constraints: Optional
            :class:`~figaroh.identification.cad_constraints.CADConstraints`.

    Returns:
        :class:`ReconstructionResult`. An SDP whose solver is missing returns
        the nullspace solution with status ``solver_missing``; any other SDP
        failure (including infeasibility) the nullspace solution with status
        ``error`` — ``effective_method`` then says ``"nullspace"``.

    Raises:
        ValueError: unknown method or prior source, missing inputs.
    """
    M, phi, params_r = _base_triplet(base_result)
    m = str(method).strip().lower()
    if m not in _METHODS:
        raise ValueError(f"Unsupported method={method!r}. Choose 'nullspace', 'sdp', or 'auto'.")
    prior = _prior_vector(theta0, params_r, prior_source, params_std_prior, model, prior_yaml_path)
    fixed = _fixed_values(params_std_prior, model)
    m = _effective_method(m, joint_names, solver)
    w = np.ones(len(params_r)) if weights is None else np.asarray(weights, dtype=float).reshape(-1)
    if w.shape != (len(params_r),) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be {len(params_r)} positive finite numbers")
    # both methods minimise ‖diag(w)(θ − θ0)‖²: the closed form takes W = w²
    theta_ns, res_ns = reconstruct_theta_r(M, phi, theta0=prior, weights=w**2)

    def nullspace(status: str) -> ReconstructionResult:
        return ReconstructionResult(
            theta_r=theta_ns,
            params_r=params_r,
            residual=res_ns,
            status=status,
            base_residual_norm=float(np.linalg.norm(res_ns)),
            effective_method="nullspace",
        )

    if m == "nullspace":
        return nullspace("ok")
    try:
        theta, t = _reconstruct_sdp(
            M,
            phi,
            params_r,
            theta0=prior,
            w=w,
            # _effective_method raised for method="sdp" without joint_names
            joint_names=list(cast(Sequence[str], joint_names)),
            mass_min=mass_min,
            psd_eig_tol=psd_eig_tol,
            solver=solver,
            max_seconds=max_seconds,
            cad_constraints=cad_constraints,
            fixed=fixed,
        )
    except ImportError as exc:
        logger.warning("SDP reconstruction unavailable (%s); nullspace solution returned", exc)
        return nullspace("solver_missing")
    except Exception as exc:  # noqa: BLE001 - reported through the status
        logger.warning("SDP reconstruction failed (%s); nullspace solution returned", exc)
        return nullspace("error")
    res = M @ theta - phi
    return ReconstructionResult(
        theta_r=theta,
        params_r=params_r,
        residual=res,
        status="ok",
        base_residual_norm=float(np.linalg.norm(res)),
        objective=t,
        effective_method="sdp",
    )


# ---------------------------------------------------------------------------
# Option A: nullspace reconstruction with optional alternating projections
# ---------------------------------------------------------------------------
def run_reconstruction(
    M: Any,
    phi_base: Any,
    params_r: Sequence[str],
    *,
    params_std_prior: Mapping[str, Any] | None = None,
    recon_cfg: Mapping[str, Any] | None = None,
    joint_names: Sequence[str] | None = None,
) -> Tuple[Dict[str, Any], Dict[str, float], bool]:
    """Nullspace reconstruction ("option A") with optional alternating LMI projections.

    ``recon_cfg`` keys: ``mode`` (must be ``"A"``), ``weights``,
    ``alternate_physical_consistency`` (bool), ``max_iters`` (≥ 1),
    ``mass_min``, ``psd_eig_tol``, ``solver``. With alternation and
    ``max_iters > 1``: project every complete link onto the physically
    consistent set, re-project onto ``{θ : M θ = φ}`` starting from the
    projected values, ``max_iters − 1`` times; then check every link.

    Args:
        M: (r, n) base mapping ``φ = M θ_r``.
        phi_base: (r,) identified base parameters.
        params_r: The n names of ``θ_r`` (columns of ``M``).
        params_std_prior: ``{name: value}`` prior; also the starting point of
            the full parameter dict (entries not in ``params_r`` keep it).
        recon_cfg: Options listed above.
        joint_names: Links considered by the alternation and the final check
            (those with all ten inertial entries).

    Returns:
        ``(payload, full_param_dict, pc_already_applied)``; payload keys
        ``mode, params_r, theta_r, theta_r_dict, residual, base_residual_norm,
        parameter_dict, alternate_physical_consistency, alternation_iters,
        final_feasibility, pc_reports``.

    Raises:
        ValueError: mode other than ``A``.
    """
    cfg = dict(recon_cfg or {})
    mode = str(cfg.get("mode", "A")).strip().upper()
    if mode != "A":
        raise ValueError(f"run_reconstruction supports mode 'A' only, got {cfg.get('mode')!r}")
    params_r = list(params_r)
    weights = cfg.get("weights")
    if isinstance(weights, Mapping):
        weights = None
    alternate = bool(cfg.get("alternate_physical_consistency", False))
    max_iters = int(cfg.get("max_iters", 1))
    if max_iters < 1:
        raise ValueError(f"max_iters must be >= 1, got {max_iters}")
    mass_min = float(cfg.get("mass_min", 1e-6))
    psd_eig_tol = float(cfg.get("psd_eig_tol", -1e-10))
    solver = str(cfg.get("solver", "cvxopt"))
    M = np.asarray(M, dtype=float)
    phi = np.asarray(phi_base, dtype=float).reshape(-1)

    theta0 = prior_vector_from_dict(params_r, params_std_prior)
    theta, res = reconstruct_theta_r(M, phi, theta0=theta0, weights=weights)
    full = {str(k): float(v) for k, v in (params_std_prior or {}).items()}
    full.update({n: float(v) for n, v in zip(params_r, theta, strict=True)})
    joints = list(joint_names) if joint_names is not None else []
    complete = [j for j in joints if all(f"{k}_{j}" in full for k in _INERTIAL_KEYS)]
    pc_reports: List[Dict[str, Any]] = []
    iters = 0
    if alternate and max_iters > 1 and complete:
        for _ in range(max_iters - 1):
            p10 = {j: np.array([full[f"{k}_{j}"] for k in _INERTIAL_KEYS]) for j in complete}
            projected, report = project_robot_p10_lmi(
                p10, mass_min=mass_min, psd_eig_tol=psd_eig_tol, solver=solver
            )
            pc_reports.append(asdict(report))
            for j, p in projected.items():
                for k, v in zip(_INERTIAL_KEYS, p, strict=True):
                    full[f"{k}_{j}"] = float(v)
            start = np.array([full[n] for n in params_r])
            theta, res = reconstruct_theta_r(M, phi, theta0=start, weights=weights)
            full.update({n: float(v) for n, v in zip(params_r, theta, strict=True)})
            iters += 1
    final = {}
    for j in complete:
        rep = check_p10_feasibility(
            [full[f"{k}_{j}"] for k in _INERTIAL_KEYS], mass_min=0.0, psd_eig_tol=psd_eig_tol
        )
        final[j] = asdict(rep)
    payload = {
        "mode": "A",
        "params_r": params_r,
        "theta_r": theta,
        "theta_r_dict": {n: float(v) for n, v in zip(params_r, theta, strict=True)},
        "residual": res,
        "base_residual_norm": float(np.linalg.norm(res)),
        "parameter_dict": full,
        "alternate_physical_consistency": alternate,
        "alternation_iters": iters,
        "final_feasibility": final,
        "pc_reports": pc_reports,
    }
    return payload, full, bool(iters)


#: Alias of :func:`run_reconstruction`.
run_option_a_reconstruction = run_reconstruction
