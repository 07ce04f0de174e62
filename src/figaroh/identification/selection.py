"""Which estimate an identification run reports.

``tasks.identification.select_stage`` picks the estimate that validation,
``verify()``, the reports, the run archive and the URDF export use:

- ``fit`` (default): the base-parameter least-squares fit, unchanged.
- ``reconstruction``: the full parameter vector reconstructed from the fit,
  accepted only when it is physically consistent and was produced by the
  requested method.
- ``physical_fit``: the direct LMI effort fit
  (:func:`figaroh.identification.physical_fit.solve_direct_effort_fit`).

A requested stage that does not meet its acceptance conditions is *rejected*:
nothing else is substituted, the selected stage is ``none`` and the verdict
fails. The fit numbers stay under their usual result keys.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

# physical_fit and physical_consistency are reached as lazy attributes of the
# package: choosing the plain least-squares estimate imports neither.
import figaroh.identification as _identification
from figaroh.identification._pipeline.records import PhysicalInputs
from figaroh.identification.config import PHYSICAL_FIT_DEFAULTS

logger = logging.getLogger(__name__)

__all__ = [
    "BASE_REL_TOL",
    "DEFAULT_STAGE",
    "SelectedEstimate",
    "choose_estimate",
    "describe_failed_links",
    "fit_physically",
    "inputs_of",
    "physical_fit_config",
    "physical_fit_requested",
    "physical_fit_settings",
    "physical_fit_wanted",
    "requested_stage",
    "run_physical_fit",
    "select_estimate",
    "stage_requested",
]

#: Stage reported when ``select_stage`` is absent.
DEFAULT_STAGE = "fit"
#: Relative base residual a reconstruction may leave.
BASE_REL_TOL = 1e-6


@dataclass
class SelectedEstimate:
    """The estimate chosen by ``select_stage`` and the verdict on it.

    Attributes:
        stage: Stage whose numbers are reported: ``fit``, ``reconstruction``
            or ``physical_fit`` when accepted, ``none`` when rejected.
        requested: The stage that was asked for.
        status: ``accepted`` or ``rejected``.
        reason: Why, in one line (names the solver(s) and the failed test).
        space: ``standard`` (values are the full standard parameter vector).
        names: Parameter names aligned with ``values``.
        values: The candidate vector (SI units); kept for diagnosis when rejected.
        phi_base_equivalent: ``M @ θ_r`` for a standard candidate (diagnostic
            only, never used for prediction).
        base_residual_rel: Relative distance of ``phi_base_equivalent`` from
            the fitted base parameters.
        feasibility: Per link ``{mass, min_eig, ok}``.
        effective_method: Method that produced a reconstruction.
        solvers: Solver names tried for a physical fit.
        psd_eig_tol: Pseudo-inertia eigenvalue tolerance the links were judged
            feasible with; the export uses the same one.
        extra: Additional keys merged into :meth:`as_dict`.
    """

    stage: str
    requested: str
    status: str
    reason: str
    space: str
    names: List[str] = field(default_factory=list)
    values: np.ndarray | None = None
    phi_base_equivalent: np.ndarray | None = None
    base_residual_rel: float | None = None
    feasibility: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    effective_method: str | None = None
    solvers: List[str] = field(default_factory=list)
    psd_eig_tol: float = -1e-10
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        """True when ``status == "accepted"``."""
        return self.status == "accepted"

    def predict(self, W_full: np.ndarray) -> np.ndarray:
        """Effort predicted by this estimate: the full regressor times the
        standard parameter vector (never ``phi_base_equivalent``).

        Args:
            W_full: (rows, len(names)) standard regressor.

        Returns:
            (rows,) effort [N·m or N].

        Raises:
            ValueError: no values, or a column count that does not match.
        """
        if self.values is None:
            raise ValueError("no estimate values to predict with")
        W = np.asarray(W_full, dtype=float)
        if W.ndim != 2 or W.shape[1] != len(self.values):
            raise ValueError(
                f"W_full must have {len(self.values)} columns (one per standard parameter), "
                f"got shape {W.shape}"
            )
        return W @ self.values

    def parameter_dict(self) -> Dict[str, float]:
        """``{name: value}`` of the candidate (empty when no values)."""
        if self.values is None:
            return {}
        return {n: float(v) for n, v in zip(self.names, self.values, strict=True)}

    def link_p10(self, joint_names: Sequence[str]) -> Dict[str, np.ndarray]:
        """Per-link 10-vectors of a standard-space estimate.

        Raises:
            ValueError: not a standard-space estimate.
            KeyError: a joint lacks an inertial parameter.
        """
        if self.space != "standard":
            raise ValueError("link inertias need a standard-space estimate")
        return _identification.physical_consistency.p10_by_joint_from_param_dict(
            parameter_dict=self.parameter_dict(), joint_names=joint_names
        )

    def as_dict(self) -> Dict[str, Any]:
        """Plain-Python summary (lists, floats), updated with ``extra``."""
        out: Dict[str, Any] = {
            "stage": self.stage,
            "requested": self.requested,
            "status": self.status,
            "reason": self.reason,
            "space": self.space,
            "names": list(self.names),
            "values": None if self.values is None else [float(v) for v in self.values],
            "phi_base_equivalent": (
                None
                if self.phi_base_equivalent is None
                else [float(v) for v in self.phi_base_equivalent]
            ),
            "base_residual_rel": (
                None if self.base_residual_rel is None else float(self.base_residual_rel)
            ),
            "feasibility": {
                j: {"mass": float(v["mass"]), "min_eig": float(v["min_eig"]), "ok": bool(v["ok"])}
                for j, v in self.feasibility.items()
            },
            "effective_method": self.effective_method,
            "solvers": list(self.solvers),
            "psd_eig_tol": float(self.psd_eig_tol),
        }
        out.update(self.extra)
        return out

    def __repr__(self) -> str:
        return (
            f"SelectedEstimate(stage={self.stage!r}, requested={self.requested!r}, "
            f"status={self.status!r}, reason={self.reason!r})"
        )


# ---------------------------------------------------------------------------
# Configuration helpers
# ---------------------------------------------------------------------------
def stage_requested(config: Mapping[str, Any] | None) -> str:
    """The configured ``select_stage`` (``fit`` when absent) of the flat settings ``config``."""
    return str((config or {}).get("select_stage") or DEFAULT_STAGE).strip().lower()


def physical_fit_settings(config: Mapping[str, Any] | None) -> Dict[str, Any]:
    """The ``physical_fit`` settings with every key present.

    The config parser already merges the defaults; a programmatic config may
    hold a partial mapping (or none), which is completed here.

    Raises:
        ValueError: unknown keys in a programmatic mapping.
    """
    raw = (config or {}).get("physical_fit")
    if isinstance(raw, dict) and PHYSICAL_FIT_DEFAULTS.keys() <= raw.keys():
        return dict(raw)
    cfg = dict(PHYSICAL_FIT_DEFAULTS)
    if isinstance(raw, dict):
        unknown = sorted(set(raw) - set(PHYSICAL_FIT_DEFAULTS))
        if unknown:
            raise ValueError(
                f"unknown physical_fit keys {unknown}; allowed: {sorted(PHYSICAL_FIT_DEFAULTS)}"
            )
        cfg.update(raw)
    return cfg


def physical_fit_requested(config: Mapping[str, Any] | None) -> bool:
    """True when ``select_stage`` is ``physical_fit`` or ``physical_fit.enabled`` is set."""
    if stage_requested(config) == "physical_fit":
        return True
    raw = (config or {}).get("physical_fit")
    return bool(isinstance(raw, dict) and raw.get("enabled"))


def _nominal_vector(inputs: PhysicalInputs) -> np.ndarray:
    """Standard parameter values (nominal prior) as floats, in regressor column order."""
    return np.array([float(v) for v in inputs.standard_parameter.values()], dtype=float)


def _param_index(inputs: PhysicalInputs) -> Dict[str, int]:
    return {n: i for i, n in enumerate(inputs.standard_parameter)}


def _equivalent_base(
    inputs: PhysicalInputs, theta: np.ndarray
) -> Tuple[np.ndarray | None, float | None]:
    """``(M θ_r, ‖M θ_r − φ_base‖ / max(‖φ_base‖, 1e-300))``; ``(None, None)`` without ``M``."""
    M, params_r, phi = inputs.M, inputs.params_r, inputs.phi_base
    if M is None or params_r is None or phi is None:
        return None, None
    index = _param_index(inputs)
    theta_r = np.asarray(theta, dtype=float)[[index[n] for n in params_r]]
    phi_eq = np.asarray(M, dtype=float) @ theta_r
    phi = np.asarray(phi, dtype=float)
    rel = float(np.linalg.norm(phi_eq - phi) / max(float(np.linalg.norm(phi)), 1e-300))
    return phi_eq, rel


def _judged_joints(inputs: PhysicalInputs) -> List[str]:
    """Links judged for feasibility: those with a parameter in ``params_r`` (all without it)."""
    joints = list(inputs.joint_names)
    params_r = inputs.params_r
    if params_r is None:
        return joints
    present = set(params_r)
    return [
        j
        for j in joints
        if any(f"{k}_{j}" in present for k in _identification.physical_consistency.INERTIAL_KEYS)
    ]


def _link_feasibility(
    inputs: PhysicalInputs, theta: np.ndarray, mass_min: float, psd_eig_tol: float
) -> Dict[str, Dict[str, Any]]:
    """``{joint: {mass, min_eig, ok}}`` with the solver-tolerant mass bound.

    Only links with at least one identified parameter are judged (a link left
    entirely at its nominal values is not), every link when ``params_r`` is
    unknown.
    """
    index = _param_index(inputs)
    out: Dict[str, Dict[str, Any]] = {}
    for joint in _judged_joints(inputs):
        keys = [f"{k}_{joint}" for k in _identification.physical_consistency.INERTIAL_KEYS]
        if any(k not in index for k in keys):
            continue
        cols = [index[k] for k in keys]
        rep = _identification.physical_consistency.check_p10_feasibility(
            np.asarray(theta, dtype=float)[cols],
            mass_min=mass_min - _identification.physical_consistency.mass_bound_tolerance(mass_min),
            psd_eig_tol=psd_eig_tol,
        )
        out[joint] = {"mass": rep.mass, "min_eig": rep.min_eig, "ok": rep.status == "feasible"}
    return out


def describe_failed_links(
    feasibility: Dict[str, Dict[str, Any]], mass_min: float, psd_eig_tol: float
) -> str:
    """``"a (mass -1 < 1e-06), b (pseudo-inertia min eigenvalue -2.0e-01 < -1e-10)"``."""
    parts = []
    for joint, v in feasibility.items():
        if v.get("ok"):
            continue
        mass = float(v["mass"])
        if mass < mass_min - _identification.physical_consistency.mass_bound_tolerance(mass_min):
            test = f"mass {mass:.6g} kg < mass_min {mass_min:g}"
        else:
            test = f"pseudo-inertia min eigenvalue {float(v['min_eig']):.3e} < {psd_eig_tol:g}"
        parts.append(f"{joint} ({test})")
    return ", ".join(parts)


# ---------------------------------------------------------------------------
# Physical fit
# ---------------------------------------------------------------------------
def _scattered_regressor(inputs: PhysicalInputs) -> np.ndarray:
    """The fit rows' regressor on every standard column (zeros where columns were dropped).

    Raises:
        ValueError: The reduced regressor does not have one column per kept parameter.
    """
    n = len(inputs.standard_parameter)
    W = np.asarray(inputs.W, dtype=float)
    eliminated = {int(i) for i in (inputs.idx_eliminated or ())}
    keep = [i for i in range(n) if i not in eliminated]
    if W.ndim != 2 or W.shape[1] != len(keep):
        raise ValueError(f"processed regressor has {W.shape[-1]} columns, expected {len(keep)}")
    Y = np.zeros((W.shape[0], n))
    Y[:, keep] = W
    return Y


def _fit_verdict(record: Any, accepted: bool, policy: Any) -> str:
    """One-line verdict on a direct-fit solve record."""
    if accepted:
        return "all links feasible"
    if record.solver_status == "optimal":
        failed = describe_failed_links(record.feasibility, policy.mass_min, policy.feas_tol)
        return "a link is not physically feasible" + (f": {failed}" if failed else "")
    verdict = "no optimal solution"
    if record.exception:
        verdict += f" ({record.exception})"
    return verdict


def _solve_physical_fit(inputs: PhysicalInputs, cfg: Dict[str, Any], outcome: Dict[str, Any]):
    """Build and solve the direct fit (second solver if the first is not optimal)."""
    solvers = outcome["solvers"]
    policy = _identification.physical_fit.PhysicalPolicy(
        mass_min=float(cfg["mass_min"]), prior_weight=float(cfg["prior_weight"])
    )
    problem = _identification.physical_fit.build_problem(
        _scattered_regressor(inputs),
        np.asarray(inputs.tau, dtype=float).reshape(-1),
        list(inputs.standard_parameter.keys()),
        list(inputs.joint_names),
        prior=_nominal_vector(inputs),
        policy=policy,
        row_weight=inputs.row_weight,
    )
    opts: Dict[str, Any] = {}
    if cfg["max_seconds"] is not None:
        opts["max_seconds"] = float(cfg["max_seconds"])
    record = _identification.physical_fit.solve_direct_effort_fit(
        problem, solver=solvers[0], **opts
    )
    steps = [f"{solvers[0]}: {record.solver_status}"]
    if record.solver_status != "optimal" and cfg["second_solver"]:
        second = str(cfg["second_solver"])
        solvers.append(second)
        record = _identification.physical_fit.solve_direct_effort_fit(
            problem, solver=second, **opts
        )
        steps.append(f"{second}: {record.solver_status}")
    outcome["record"] = record
    outcome["psd_eig_tol"] = problem.policy.feas_tol
    outcome["accepted"] = bool(record.solver_status == "optimal" and record.accepted)
    outcome["reason"] = "; ".join(steps) + f"; {_fit_verdict(record, outcome['accepted'], policy)}"


def fit_physically(inputs: PhysicalInputs) -> Dict[str, Any]:
    """Solve the direct LMI effort fit on the data the fit used.

    Returns an outcome dict (never raises): ``record`` (a
    :class:`~figaroh.identification.physical_fit.SolveRecord` or ``None``),
    ``solvers`` (names tried), ``reason``, ``accepted``, ``config`` and
    ``psd_eig_tol``. The processed regressor is scattered into all standard
    columns (zeros where columns were eliminated); friction and offsets are
    free parameters and the prior is the nominal standard parameter vector.
    """
    outcome: Dict[str, Any] = {
        "record": None,
        "solvers": [],
        "reason": "",
        "accepted": False,
        "config": None,
    }
    try:
        cfg = physical_fit_settings(inputs.config)
        outcome["config"] = cfg
        outcome["solvers"].append(str(cfg["solver"]))
        _solve_physical_fit(inputs, cfg, outcome)
    except Exception as exc:  # noqa: BLE001 - solver stack missing, shape problems, ...
        logger.warning("physical fit failed: %s", exc)
        outcome["reason"] = f"{type(exc).__name__}: {exc}"
    return outcome


# ---------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------
def _reconstruction_cfg(config: Mapping[str, Any] | None) -> Dict[str, Any]:
    cfg = (config or {}).get("reconstruction")
    return dict(cfg) if isinstance(cfg, dict) else {}


def _rejected(requested: str, reason: str, **kw: Any) -> SelectedEstimate:
    return SelectedEstimate(
        stage="none", requested=requested, status="rejected", reason=reason, space="standard", **kw
    )


def _select_reconstruction(inputs: PhysicalInputs, recon: Any) -> SelectedEstimate:
    names = list(inputs.standard_parameter.keys())
    if recon is None:
        return _rejected("reconstruction", "reconstruction did not run", names=names)
    cfg = _reconstruction_cfg(inputs.config)
    requested_method = str(cfg.get("method") or "nullspace").strip().lower()
    mass_min = float(cfg.get("mass_min", 1e-6))
    psd_eig_tol = float(cfg.get("psd_eig_tol", -1e-10))
    theta = _nominal_vector(inputs)
    index = _param_index(inputs)
    for n, v in zip(recon.params_r, recon.theta_r, strict=True):
        theta[index[n]] = float(v)
    phi = np.asarray(inputs.phi_base, dtype=float)
    base_rel = float(np.linalg.norm(recon.residual) / max(float(np.linalg.norm(phi)), 1e-300))
    phi_eq, _ = _equivalent_base(inputs, theta)
    feas = _link_feasibility(inputs, theta, mass_min, psd_eig_tol)
    eff = recon.effective_method
    problems: List[str] = []
    extra: Dict[str, Any] = {}
    if recon.status != "ok":
        problems.append(f"reconstruction status {recon.status}")
    if requested_method != "auto" and eff != requested_method:
        problems.append(f"requested {requested_method} but {eff} was used")
        extra["swapped_method"] = True
    if not base_rel <= BASE_REL_TOL:
        problems.append(f"base residual {base_rel:.2e} > {BASE_REL_TOL:.0e}")
    failed = describe_failed_links(feas, mass_min, psd_eig_tol)
    if failed:
        problems.append(f"infeasible links: {failed}")
    common: Dict[str, Any] = dict(
        names=names,
        values=theta,
        phi_base_equivalent=phi_eq,
        base_residual_rel=base_rel,
        feasibility=feas,
        effective_method=eff,
        psd_eig_tol=psd_eig_tol,
        extra=extra,
    )
    if problems:
        return _rejected("reconstruction", "; ".join(problems), **common)
    return SelectedEstimate(
        stage="reconstruction",
        requested="reconstruction",
        status="accepted",
        reason=f"{eff} reconstruction, all links feasible",
        space="standard",
        **common,
    )


def _select_physical_fit(
    inputs: PhysicalInputs, outcome: Dict[str, Any] | None
) -> SelectedEstimate:
    names = list(inputs.standard_parameter.keys())
    if outcome is None:
        return _rejected("physical_fit", "physical fit did not run", names=names)
    record = outcome.get("record")
    solvers = list(outcome.get("solvers") or [])
    psd_eig_tol = float(outcome.get("psd_eig_tol", -1e-8))
    if record is None or record.theta is None:
        return _rejected(
            "physical_fit",
            outcome.get("reason") or "physical fit produced no estimate",
            names=names,
            solvers=solvers,
            psd_eig_tol=psd_eig_tol,
        )
    theta = np.asarray(record.theta, dtype=float)
    phi_eq, rel = _equivalent_base(inputs, theta)
    common: Dict[str, Any] = dict(
        names=names,
        values=theta,
        phi_base_equivalent=phi_eq,
        base_residual_rel=rel,
        feasibility=dict(record.feasibility),
        solvers=solvers,
        psd_eig_tol=psd_eig_tol,
    )
    if not outcome.get("accepted"):
        return _rejected("physical_fit", outcome.get("reason") or "rejected", **common)
    return SelectedEstimate(
        stage="physical_fit",
        requested="physical_fit",
        status="accepted",
        reason=outcome.get("reason") or "all links feasible",
        space="standard",
        **common,
    )


def choose_estimate(
    inputs: PhysicalInputs,
    recon_result: Any = None,
    physical_fit_outcome: Dict[str, Any] | None = None,
) -> SelectedEstimate:
    """Build the :class:`SelectedEstimate` for the configured stage.

    Args:
        inputs: What the physical steps read (settings, parameters, fit rows).
        recon_result: The reconstruction result (``select_stage: reconstruction``).
        physical_fit_outcome: The :func:`fit_physically` outcome
            (``select_stage: physical_fit``).

    Raises:
        ValueError: ``select_stage`` is ``fit`` (nothing to select) or unknown.
    """
    stage = stage_requested(inputs.config)
    if stage == DEFAULT_STAGE:
        raise ValueError("select_stage='fit' reports the base fit; nothing to select")
    if stage == "reconstruction":
        return _select_reconstruction(inputs, recon_result)
    if stage == "physical_fit":
        return _select_physical_fit(inputs, physical_fit_outcome)
    raise ValueError(f"select_stage={stage!r} is not selectable")


# ---------------------------------------------------------------------------
# figaroh 1.0.2 entry points (take a solved identification object)
# ---------------------------------------------------------------------------
def _config_of(identif: Any) -> Mapping[str, Any]:
    return getattr(identif, "identif_config", None) or {}


def inputs_of(identif: Any) -> PhysicalInputs:
    """The :class:`~figaroh.identification._pipeline.records.PhysicalInputs` of a solved object.

    Reads ``identif_config``, ``model``, ``standard_parameter``, ``phi_base``
    and the fit rows of the last ``solve`` (attributes absent → None).
    """
    params_r = getattr(identif, "_params_r_for_recon", None)
    fit_joints = getattr(identif, "fit_joints", None)
    return PhysicalInputs(
        config=_config_of(identif),
        model=identif.model,
        joint_names=tuple(str(j) for j in identif.model.names[1:]),
        standard_parameter=getattr(identif, "standard_parameter", None) or {},
        phi_base=getattr(identif, "phi_base", None),
        M=getattr(identif, "_M_matrix", None),
        params_r=None if params_r is None else tuple(params_r),
        W=getattr(identif, "_solve_W", None),
        tau=getattr(identif, "_solve_tau", None),
        idx_eliminated=tuple(getattr(identif, "_idx_eliminated", None) or ()),
        row_weight=getattr(identif, "_wls_row_weight", None),
        fit_joints=tuple(fit_joints()) if callable(fit_joints) and _config_of(identif) else (),
    )


def requested_stage(identif: Any) -> str:
    """The configured ``select_stage`` of ``identif.identif_config`` (``fit`` when absent)."""
    return stage_requested(_config_of(identif))


def physical_fit_config(identif: Any) -> Dict[str, Any]:
    """The ``physical_fit`` settings of ``identif.identif_config`` with every key present.

    Raises:
        ValueError: unknown keys in a programmatic mapping.
    """
    return physical_fit_settings(_config_of(identif))


def physical_fit_wanted(identif: Any) -> bool:
    """True when ``select_stage`` is ``physical_fit`` or ``physical_fit.enabled`` is set."""
    return physical_fit_requested(_config_of(identif))


def run_physical_fit(identif: Any) -> Dict[str, Any]:
    """The direct LMI effort fit on the rows of the last ``solve`` (see :func:`fit_physically`)."""
    return fit_physically(inputs_of(identif))


def select_estimate(identif: Any) -> SelectedEstimate:
    """The :class:`SelectedEstimate` of a solved object (see :func:`choose_estimate`).

    Raises:
        ValueError: ``select_stage`` is ``fit`` (nothing to select) or unknown.
    """
    return choose_estimate(
        inputs_of(identif),
        getattr(identif, "_recon_result", None),
        getattr(identif, "_physical_fit", None),
    )
