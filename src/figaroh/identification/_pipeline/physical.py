"""Step 5 — physical consistency, reconstruction, physical fit and selection.

Each function reads a :class:`~.records.PhysicalInputs` (and the fit-results
dict of the base fit) and returns the ``result`` entry it produces, plus the
solver object the next steps need; the orchestrator stores them, in this
order:

1. :func:`check_consistency` → ``result["physical consistency"]``: per-link
   feasibility of the identified parameters and, unless all are feasible and
   ``skip_if_feasible``, their projection onto the physically consistent set
   (pseudo-inertia ``P(θ) ⪰ 0``, mass ≥ ``mass_min`` [kg]);
2. :func:`reconstruct` → ``result["reconstruction"]`` and the reconstruction
   result (full standard parameters ``θ_r`` from ``φ_base = M θ_r``);
3. :func:`physical_fit` → ``result["physical_fit"]`` (direct LMI effort fit)
   and :func:`select` → ``result["selected"]`` (the estimate
   ``select_stage`` reports).

:func:`physical_stage` decides the ``physical`` stage record,
:func:`validation_estimate` what validation predicts with.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

# The physical-consistency, CAD-bound and reconstruction modules are reached as
# lazy attributes of the package: a least-squares run that checks no consistency
# and reconstructs nothing never imports them.
import figaroh.identification as _identification
from figaroh._run.physical_account import consistency_source_label
from figaroh.identification._pipeline.records import PhysicalInputs
from figaroh.identification.selection import (
    DEFAULT_STAGE,
    SelectedEstimate,
    choose_estimate,
    fit_physically,
    physical_fit_requested,
    stage_requested,
)

logger = logging.getLogger(__name__)

__all__ = [
    "INERTIAL_KEYS",
    "RECONSTRUCTION_SOURCE",
    "check_consistency",
    "consistency_enabled",
    "consistency_parameters",
    "exportable_selection",
    "physical_fit",
    "physical_stage",
    "reconstructed_parameter_dict",
    "reconstruction_wanted",
    "reconstruct",
    "select",
    "selected_fit_rmse",
    "selection_report_lines",
    "urdf_parameters",
    "validation_estimate",
]

INERTIAL_KEYS = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")

#: ``source`` of a physical-consistency report that checked the reconstructed fit.
RECONSTRUCTION_SOURCE = "reconstruction"


# ---------------------------------------------------------------------------
# 1. physical consistency
# ---------------------------------------------------------------------------
def _consistency_cfg(config: Mapping[str, Any]) -> Dict[str, Any]:
    cfg = config.get("physical_consistency") or {}
    return cfg if isinstance(cfg, dict) else {}


def consistency_enabled(config: Mapping[str, Any]) -> bool:
    """``physical_consistency.enabled`` (the flat ``physical_consistency_enabled`` wins)."""
    enabled = _consistency_cfg(config).get("enabled", False)
    legacy = config.get("physical_consistency_enabled")
    return bool(enabled if legacy is None else legacy)


def consistency_parameters(
    fit_results: Mapping[str, Any],
) -> Tuple[Mapping[str, float] | None, str]:
    """``(parameters, source)`` given with the fit results, else ``(None, "reconstruction")``."""
    if fit_results.get("parameter_dict") is not None:
        return fit_results["parameter_dict"], "identif_results.parameter_dict"
    if fit_results.get("standard_parameter_dict") is not None:
        return fit_results["standard_parameter_dict"], "identif_results.standard_parameter_dict"
    return None, RECONSTRUCTION_SOURCE


def reconstructed_parameter_dict(
    standard_parameter: Mapping[str, float], recon_result: Any
) -> Dict[str, float]:
    """Nominal standard parameters with the reconstructed ``θ_r`` entries."""
    full = {str(k): float(v) for k, v in (standard_parameter or {}).items()}
    full.update(recon_result.as_dict())
    return full


def _projection_weights(cfg: Mapping[str, Any]) -> np.ndarray | None:
    """Per-entry weights of the projection (None: automatic scaling).

    Raises:
        ValueError: Malformed ``weights``.
    """
    w = cfg.get("weights") or {"mode": "auto"}
    if not isinstance(w, dict):
        raise ValueError(f"physical_consistency.weights must be a mapping, got {w!r}")
    mode = str(w.get("mode", "auto")).lower()
    if mode == "auto":
        return None
    if mode != "manual":
        raise ValueError(f"physical_consistency.weights.mode must be auto or manual, got {mode!r}")
    manual = w.get("manual") or {}
    wm, wh, ws = (float(manual.get(k, 1.0)) for k in ("m", "h", "Sigma"))
    return np.array([wm, wh, wh, wh] + [ws] * 6)


def _cad_constraints(cfg: Mapping[str, Any], model: Any, section: str) -> Any:
    """CAD constraints of a config section (None, with a warning, when malformed)."""
    try:
        return _identification.cad_constraints.build_cad_constraints_from_config(
            cfg.get("cad_constraints") or {}, model=model
        )
    except Exception as exc:  # noqa: BLE001 - documented: ignored
        logger.warning("%s.cad_constraints ignored: %s", section, exc)
        return None


def _project(
    p10: Mapping[str, np.ndarray],
    params: Dict[str, float],
    cfg: Mapping[str, Any],
    inputs: PhysicalInputs,
    common: Dict[str, Any],
) -> Dict[str, Any]:
    """LMI projection of every link; the entries of the consistency report."""
    project = _identification.physical_consistency.project_robot_p10_lmi  # not in the guard
    try:
        projected, report = project(
            p10,
            mass_min=common["mass_min"],
            psd_eig_tol=common["psd_eig_tol"],
            weights=_projection_weights(cfg),
            solver=common["solver"],
            verbose=bool(cfg.get("verbose", False)),
            max_seconds=cfg.get("max_seconds"),
            cad_constraints=_cad_constraints(cfg, inputs.model, "physical_consistency"),
        )
    except ImportError as exc:
        return dict(status="unavailable", reason=str(exc), **common)
    except Exception as exc:  # noqa: BLE001
        return dict(status="error", reason=f"{type(exc).__name__}: {exc}", **common)
    return dict(
        status=report.status,
        projection=asdict(report),
        raw_parameters=params,
        projected_parameters=_identification.physical_consistency.param_dict_with_p10_by_joint(
            parameter_dict=params, p10_by_joint=projected
        ),
        **common,
    )


def check_consistency(
    inputs: PhysicalInputs, params: Mapping[str, float] | None, source: str
) -> Dict[str, Any]:
    """Check every link of ``params`` and project them when needed.

    Args:
        inputs: Settings and model.
        params: Identified standard parameters (None: nothing identified to check).
        source: Where ``params`` come from (report ``source``).

    Returns:
        The ``result["physical consistency"]`` entry: ``status``
        (``skipped``, ``already_feasible``, ``unavailable``, ``error`` or the
        projection status), ``reason``, ``feasibility`` per link, raw and
        projected parameters. Never raises for solver problems.
    """
    cfg = _consistency_cfg(inputs.config)
    out: Dict[str, Any] = {"enabled": True}
    if params is None:
        logger.info(
            "physical_consistency: nothing identified to check (enable reconstruction "
            "to check the reconstructed full parameters); skipped"
        )
        out.update(status="skipped", reason="no parameter_dict available")
        return out
    mass_min = float(cfg.get("mass_min", 1e-6))
    psd_eig_tol = float(cfg.get("psd_eig_tol", -1e-10))
    joints = [str(j) for j in (cfg.get("joints") or inputs.joint_names)]
    params = {str(k): float(v) for k, v in params.items()}
    try:
        p10 = _identification.physical_consistency.p10_by_joint_from_param_dict(
            parameter_dict=params, joint_names=joints
        )
    except KeyError as exc:
        out.update(status="skipped", reason=f"missing inertial keys: {exc.args[0]}", source=source)
        return out
    feas = {
        j: asdict(
            _identification.physical_consistency.check_p10_feasibility(
                p, mass_min=mass_min, psd_eig_tol=psd_eig_tol
            )
        )
        for j, p in p10.items()
    }
    common = {
        "source": source,
        "solver": str(cfg.get("solver", "cvxopt")),
        "mass_min": mass_min,
        "psd_eig_tol": psd_eig_tol,
        "feasibility": feas,
    }
    if all(v["status"] == "feasible" for v in feas.values()) and cfg.get("skip_if_feasible", True):
        out.update(
            status="already_feasible",
            raw_parameters=params,
            projected_parameters=dict(params),
            **common,
        )
        return out
    out.update(_project(p10, params, cfg, inputs, common))
    return out


# ---------------------------------------------------------------------------
# 2. reconstruction
# ---------------------------------------------------------------------------
def _recon_cfg(config: Mapping[str, Any]) -> Dict[str, Any]:
    cfg = config.get("reconstruction")
    return dict(cfg) if isinstance(cfg, dict) else {}


def reconstruction_wanted(config: Mapping[str, Any]) -> bool:
    """``reconstruction.enabled`` or ``select_stage: reconstruction``."""
    return bool(_recon_cfg(config).get("enabled") or stage_requested(config) == "reconstruction")


def reconstruct(
    inputs: PhysicalInputs, fit_results: Mapping[str, Any]
) -> Tuple[Dict[str, Any], Any]:
    """Full standard parameters ``θ_r`` with ``M θ_r = φ_base``, closest to the prior.

    Uses ``fit_results["M"]``, ``["params_r"]`` (QR step) and ``["phi_base"]``
    (the fitted values, WLS included); without them the step is ``skipped``.
    The prior is the nominal ``standard_parameter`` (``prior.source: dict``),
    the model's inertias (``urdf``) or a YAML file (``yaml``).

    Returns:
        ``(entry, recon_result)``: the ``result["reconstruction"]`` entry and
        the reconstruction result (None when nothing was reconstructed).
    """
    cfg = _recon_cfg(inputs.config)
    out: Dict[str, Any] = {"enabled": True}
    M, params_r, phi = (fit_results.get(k) for k in ("M", "params_r", "phi_base"))
    if M is None or params_r is None or phi is None:
        out.update(status="skipped", reason="M matrix not available; run solve() first")
        return out, None
    method = str(cfg.get("method", "nullspace")).strip().lower()
    prior = cfg.get("prior") or {}
    sdp = cfg.get("sdp") or {}
    weights = cfg.get("weights")
    if isinstance(weights, dict):
        weights = None
    cad = _cad_constraints(cfg, inputs.model, "reconstruction")
    try:
        res = _identification.reconstruction.reconstruct_full_parameters(
            (np.asarray(M, dtype=float), np.asarray(phi, dtype=float), list(params_r)),
            method=method,
            params_std_prior=dict(inputs.standard_parameter),
            prior_source=str(prior.get("source", "dict")),
            prior_yaml_path=prior.get("yaml_path"),
            model=inputs.model,
            weights=None if weights is None else np.asarray(weights, dtype=float),
            joint_names=list(inputs.joint_names),
            mass_min=float(cfg.get("mass_min", 1e-6)),
            psd_eig_tol=float(cfg.get("psd_eig_tol", -1e-10)),
            solver=str(sdp.get("solver", "cvxopt")),
            max_seconds=sdp.get("max_seconds"),
            cad_constraints=cad,
        )
    except Exception as exc:  # noqa: BLE001 - bad config / shapes become a status
        out.update(status="error", method=method, reason=f"{type(exc).__name__}: {exc}")
        return out, None
    out.update(
        status=res.status,
        method=method,
        effective_method=res.effective_method,
        base_residual_norm=res.base_residual_norm,
        objective=res.objective,
        theta_r_dict=res.as_dict(),
        params_r=list(res.params_r),
    )
    return out, res


# ---------------------------------------------------------------------------
# 3. physical fit and selection
# ---------------------------------------------------------------------------
def physical_fit(inputs: PhysicalInputs) -> Tuple[Dict[str, Any] | None, Dict[str, Any] | None]:
    """The direct LMI fit when ``select_stage: physical_fit`` or ``physical_fit.enabled``.

    Returns:
        ``(outcome, entry)`` — the :func:`~figaroh.identification.selection.fit_physically`
        outcome and ``result["physical_fit"] = {status, reason, solvers,
        psd_eig_tol, record}``; ``(None, None)`` when not wanted.
    """
    if not physical_fit_requested(inputs.config):
        return None, None
    outcome = fit_physically(inputs)
    record = outcome.get("record")
    entry = {
        "status": "accepted" if outcome.get("accepted") else "rejected",
        "reason": outcome.get("reason", ""),
        "solvers": list(outcome.get("solvers") or []),
        "psd_eig_tol": outcome.get("psd_eig_tol"),
        "record": None if record is None else record.as_dict(),
    }
    return outcome, entry


def selected_fit_rmse(
    inputs: PhysicalInputs, sel: SelectedEstimate | None
) -> Tuple[float | None, Dict[str, float]]:
    """RMSE of a standard-space candidate on the exact fit rows, pooled and per fit joint.

    Prediction ``W @ values[kept]`` (``kept`` = columns not eliminated) [N·m or N].
    """
    if sel is None or sel.values is None or inputs.W is None:
        return None, {}
    n = len(sel.values)
    eliminated = {int(i) for i in (inputs.idx_eliminated or ())}
    kept = [i for i in range(n) if i not in eliminated]
    W = np.asarray(inputs.W, dtype=float)
    if W.shape[1] != len(kept):
        return None, {}
    resid = np.asarray(inputs.tau, dtype=float).reshape(-1) - W @ sel.values[kept]
    rmse = float(np.sqrt(np.mean(resid**2)))
    names = list(inputs.fit_joints)
    per: Dict[str, float] = {}
    if names and resid.size % len(names) == 0:
        for name, block in zip(names, resid.reshape(len(names), -1), strict=True):
            per[name] = float(np.sqrt(np.mean(block**2)))
    return rmse, per


def select(
    inputs: PhysicalInputs, recon_result: Any, physical_fit_outcome: Dict[str, Any] | None
) -> Tuple[SelectedEstimate | None, Dict[str, Any] | None]:
    """The estimate ``select_stage`` asks for (``reconstruction`` / ``physical_fit``).

    Returns:
        ``(selected, entry)`` with ``entry = selected.as_dict()`` plus
        ``effort_rmse_fit`` and ``effort_rmse_fit_per_joint``; ``(None, None)``
        with the default stage.
    """
    if stage_requested(inputs.config) not in ("reconstruction", "physical_fit"):
        return None, None
    sel = choose_estimate(inputs, recon_result, physical_fit_outcome)
    rmse, per = selected_fit_rmse(inputs, sel)
    entry = sel.as_dict()
    entry["effort_rmse_fit"] = rmse
    entry["effort_rmse_fit_per_joint"] = per
    if sel.accepted:
        logger.info("Selected estimate: %s (%s)", sel.stage, sel.reason)
    else:
        logger.warning("The requested %s estimate was rejected: %s", sel.requested, sel.reason)
    return sel, entry


def validation_estimate(
    config: Mapping[str, Any], sel: SelectedEstimate | None
) -> Tuple[np.ndarray | None, str | None]:
    """What validation predicts with: ``(values or None, estimate_stage or None)``.

    Default stage → ``(None, None)`` (base fit, no ``estimate_stage`` key);
    an accepted standard-space selection → ``(values, stage)``; a rejected
    one → ``(None, "fit")`` (never substituted).
    """
    if stage_requested(config) == DEFAULT_STAGE:
        return None, None
    if sel is not None and sel.accepted and sel.space == "standard" and sel.values is not None:
        return np.asarray(sel.values, dtype=float), sel.stage
    return None, "fit"


# ---------------------------------------------------------------------------
# Stage record, report lines, export
# ---------------------------------------------------------------------------
def _selection_stage(
    sel: SelectedEstimate, result: Mapping[str, Any]
) -> Tuple[str, str, Dict[str, Any]]:
    metrics: Dict[str, Any] = {}
    if sel.feasibility:
        metrics["min_pseudo_inertia_eig"] = (
            min(float(v["min_eig"]) for v in sel.feasibility.values()),
            "kg·m²",
        )
    rmse = (result.get("selected") or {}).get("effort_rmse_fit")
    if rmse is not None:
        metrics["effort_rmse"] = (rmse, "N·m or N (stacked joints)")
    if sel.accepted:
        status = "ok"
    elif sel.requested == "reconstruction" and sel.extra.get("swapped_method"):
        status = "fallback"
    else:
        status = "failed"
    return status, f"{sel.requested}: {sel.reason}", metrics


def _status_stage(result: Mapping[str, Any]) -> Tuple[str, str, None] | None:
    pf = result.get("physical_fit")
    if pf is not None:
        status = "ok" if pf.get("status") == "accepted" else "failed"
        return status, f"physical_fit: {pf.get('reason', '')}", None
    pce = result.get("physical consistency")
    if pce is not None:
        st = pce.get("status")
        if st in ("skipped", "unavailable"):
            status = "not_run"
        elif st in ("error", "failed"):
            status = "failed"
        else:
            status = "ok"
        return status, str(pce.get("reason") or st), None
    rc = result.get("reconstruction")
    if rc is not None:
        st = rc.get("status")
        status = (
            "ok" if st == "ok" else ("not_run" if st in ("skipped", "unavailable") else "fallback")
        )
        return (
            status,
            rc.get("reason") or f"reconstruction {st} ({rc.get('effective_method')})",
            None,
        )
    return None


def physical_stage(
    result: Mapping[str, Any], sel: SelectedEstimate | None
) -> Tuple[str, str, Dict[str, Any] | None] | None:
    """``(status, reason, metrics)`` of stage ``physical``, or None when nothing ran.

    Priority selection > physical fit > consistency > reconstruction:

    * selection of ``physical_fit``: accepted → ``ok``, rejected → ``failed``;
    * selection of ``reconstruction``: accepted → ``ok``; rejected because the
      requested method was swapped → ``fallback``; otherwise ``failed``;
    * ``physical_fit.enabled`` without selection: accepted → ``ok``, else ``failed``;
    * consistency ``skipped``/``unavailable`` → ``not_run``,
      ``error``/``failed`` → ``failed``, anything else → ``ok``;
    * a reconstruction alone: ``ok`` → ``ok``, otherwise ``fallback``
      (``not_run`` when skipped or unavailable).
    """
    if sel is not None:
        return _selection_stage(sel, result)
    return _status_stage(result)


def selection_report_lines(result: Mapping[str, Any], sel: SelectedEstimate | None) -> List[str]:
    """Terminal-report lines for the selected estimate (empty with the default stage)."""
    lines: List[str] = []
    pce = result.get("physical consistency")
    if pce is not None:
        lines.append(f"Physical consistency ({consistency_source_label(pce)}): {pce.get('status')}")
    if sel is None:
        pf = result.get("physical_fit")
        if pf is not None:
            lines.append(f"Physical fit: {pf['status']} ({pf.get('reason', '')})")
        return lines
    entry = result.get("selected") or {}
    lines.append(f"Selected estimate: {sel.requested} -> {sel.status} (stage {sel.stage})")
    lines.append(f"  Reason: {sel.reason}")
    if entry.get("effort_rmse_fit") is not None:
        lines.append(f"  RMSE (selected estimate): {entry['effort_rmse_fit']:.4g}")
        per = entry.get("effort_rmse_fit_per_joint") or {}
        if per:
            lines.append("  RMSE per joint: " + ", ".join(f"{j} {v:.4g}" for j, v in per.items()))
    if sel.feasibility:
        worst = min(sel.feasibility.items(), key=lambda kv: kv[1]["min_eig"])
        lines.append(
            f"  Smallest pseudo-inertia eigenvalue: {worst[1]['min_eig']:.3e} ({worst[0]}), "
            f"tolerance {sel.psd_eig_tol:g}"
        )
    return lines


def exportable_selection(sel: SelectedEstimate | None) -> SelectedEstimate:
    """``sel`` when it is an accepted standard-space estimate (one a URDF can hold).

    Raises:
        ValueError: No standard-space estimate, or a rejected one.
    """
    if sel is None or sel.space != "standard":
        raise ValueError(
            "the base-parameter fit has no link inertials to export; "
            "set select_stage to 'reconstruction' or 'physical_fit'"
        )
    if not sel.accepted:
        raise ValueError(
            f"the requested {sel.requested} estimate was rejected ({sel.reason}); nothing to export"
        )
    return sel


def urdf_parameters(sel: SelectedEstimate | None, joints: Sequence[str]) -> Dict[str, float]:
    """``{<key>_<joint>: value}`` link inertials of an accepted standard-space selection.

    Raises:
        ValueError: No standard-space estimate, or a rejected one
            (:func:`exportable_selection`).
        KeyError: A joint lacks an inertial parameter.
    """
    sel = exportable_selection(sel)
    params: Dict[str, float] = {}
    for joint, p10 in sel.link_p10(list(joints)).items():
        for key, value in zip(INERTIAL_KEYS, p10, strict=True):
            params[f"{key}_{joint}"] = float(value)
    return params
