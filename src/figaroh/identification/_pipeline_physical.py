"""Physical-consistency steps of the ``BaseIdentification`` pipeline.

Plain functions taking the identification object, so the base class only
calls them (in ``_store_results``, after the result dict is built and before
validation):

1. :func:`apply_physical_consistency_if_enabled` → ``result["physical consistency"]``
   (check / LMI-project the reconstructed fit or a given parameter dict; it
   runs step 2 first when it needs the reconstruction);
2. :func:`apply_reconstruction_if_enabled` → ``result["reconstruction"]`` and
   ``identif._recon_result`` (computed once per ``identif_results``);
3. :func:`run_physical_fit_if_wanted` → ``identif._physical_fit`` and
   ``result["physical_fit"]``;
4. :func:`select_if_requested` → ``identif.selected`` and ``result["selected"]``;

then, after validation, :func:`record_physical_stage` (stage ``physical``).
:func:`export_selected_urdf` is the body of ``BaseIdentification.export_urdf``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict
from typing import Any, Dict, List, Tuple

import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "apply_physical_consistency_if_enabled",
    "apply_reconstruction_if_enabled",
    "consistency_source_label",
    "export_selected_urdf",
    "record_physical_stage",
    "run_physical_fit_if_wanted",
    "select_if_requested",
    "selected_fit_rmse",
    "selection_report_lines",
    "store_physical_results",
    "validation_estimate",
]

_INERTIAL_KEYS = ["m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"]


def _cfg(identif: Any) -> Dict[str, Any]:
    return getattr(identif, "identif_config", None) or {}


def _joint_names(identif: Any) -> List[str]:
    return [str(j) for j in identif.model.names[1:]]


# ---------------------------------------------------------------------------
# 1. physical consistency of a parameter dict
# ---------------------------------------------------------------------------
def _projection_weights(cfg: Dict[str, Any]) -> np.ndarray | None:
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


#: ``source`` of a physical-consistency report that checked the reconstructed fit.
RECONSTRUCTION_SOURCE = "reconstruction"

#: Human-readable label of each ``source`` (reports).
SOURCE_LABELS = {
    RECONSTRUCTION_SOURCE: "reconstructed fit",
    "identif_results.parameter_dict": "given parameter_dict",
    "identif_results.standard_parameter_dict": "given standard_parameter_dict",
}


def _reconstructed_parameter_dict(
    identif: Any, identif_results: Dict[str, Any]
) -> Dict[str, float] | None:
    """The identified full parameters: nominal values with the reconstructed ``θ_r`` entries.

    Runs the reconstruction step (once per ``identif_results``) when it is
    enabled or selected — through the ``_apply_reconstruction_if_enabled``
    hook, so a subclass override takes effect; None when it is not enabled,
    or when it could not run.
    """
    hook = getattr(identif, "_apply_reconstruction_if_enabled", None)
    if callable(hook):
        entry = hook(identif_results)
    else:
        entry = apply_reconstruction_if_enabled(identif, identif_results)
    res = getattr(identif, "_recon_result", None)
    if entry is None or res is None:
        return None
    full = {str(k): float(v) for k, v in (identif.standard_parameter or {}).items()}
    full.update(res.as_dict())
    return full


def apply_physical_consistency_if_enabled(
    identif: Any, identif_results: Dict[str, Any]
) -> Dict[str, Any] | None:
    """``BaseIdentification._apply_physical_consistency_if_enabled``.

    Checks every link of the identified parameters and, unless all are
    feasible and ``skip_if_feasible``, projects each onto the physically
    consistent set. The parameters (``source`` of the report) are, in order:
    ``identif_results["parameter_dict"]``, ``["standard_parameter_dict"]``,
    else the **reconstructed fit** (``"reconstruction"``: the nominal
    standard parameters with the reconstructed ``θ_r`` entries, which needs
    ``reconstruction.enabled`` or ``select_stage: reconstruction``; the
    reconstruction is then run here, once). The nominal (CAD) parameters are
    never projected: with nothing identified to check the status is
    ``skipped`` (reason ``"no parameter_dict available"``).

    Stores and returns ``result["physical consistency"]``; returns None (no
    key) when disabled. Never raises for solver problems (they become a
    status).
    """
    cfg = _cfg(identif).get("physical_consistency") or {}
    if not isinstance(cfg, dict):
        cfg = {}
    enabled = cfg.get("enabled", False)
    legacy = _cfg(identif).get("physical_consistency_enabled")
    if legacy is not None:
        enabled = legacy
    if not enabled:
        return None
    out: Dict[str, Any] = {"enabled": True}
    if identif_results.get("parameter_dict") is not None:
        params, source = identif_results["parameter_dict"], "identif_results.parameter_dict"
    elif identif_results.get("standard_parameter_dict") is not None:
        params = identif_results["standard_parameter_dict"]
        source = "identif_results.standard_parameter_dict"
    else:
        params, source = (
            _reconstructed_parameter_dict(identif, identif_results),
            RECONSTRUCTION_SOURCE,
        )
        if params is None:
            logger.info(
                "physical_consistency: nothing identified to check (enable reconstruction "
                "to check the reconstructed full parameters); skipped"
            )
            out.update(status="skipped", reason="no parameter_dict available")
            return _store(identif, "physical consistency", out)
    try:
        from figaroh.identification import physical_consistency as pc
        from figaroh.identification.cad_constraints import build_cad_constraints_from_config
    except ImportError as exc:  # pragma: no cover - part of the package
        out.update(status="unavailable", reason=f"import failed: {exc}")
        return _store(identif, "physical consistency", out)
    mass_min = float(cfg.get("mass_min", 1e-6))
    psd_eig_tol = float(cfg.get("psd_eig_tol", -1e-10))
    solver = str(cfg.get("solver", "cvxopt"))
    joints = [str(j) for j in (cfg.get("joints") or _joint_names(identif))]
    params = {str(k): float(v) for k, v in params.items()}
    try:
        p10 = pc.p10_by_joint_from_param_dict(parameter_dict=params, joint_names=joints)
    except KeyError as exc:
        out.update(status="skipped", reason=f"missing inertial keys: {exc.args[0]}", source=source)
        return _store(identif, "physical consistency", out)
    feas = {
        j: asdict(pc.check_p10_feasibility(p, mass_min=mass_min, psd_eig_tol=psd_eig_tol))
        for j, p in p10.items()
    }
    common = {
        "source": source,
        "solver": solver,
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
        return _store(identif, "physical consistency", out)
    try:
        cad = build_cad_constraints_from_config(
            cfg.get("cad_constraints") or {}, model=identif.model
        )
    except Exception as exc:  # noqa: BLE001 - documented: ignored
        logger.warning("physical_consistency.cad_constraints ignored: %s", exc)
        cad = None
    try:
        projected, report = pc.project_robot_p10_lmi(
            p10,
            mass_min=mass_min,
            psd_eig_tol=psd_eig_tol,
            weights=_projection_weights(cfg),
            solver=solver,
            verbose=bool(cfg.get("verbose", False)),
            max_seconds=cfg.get("max_seconds"),
            cad_constraints=cad,
        )
    except ImportError as exc:
        out.update(status="unavailable", reason=str(exc), **common)
        return _store(identif, "physical consistency", out)
    except Exception as exc:  # noqa: BLE001
        out.update(status="error", reason=f"{type(exc).__name__}: {exc}", **common)
        return _store(identif, "physical consistency", out)
    out.update(
        status=report.status,
        projection=asdict(report),
        raw_parameters=params,
        projected_parameters=pc.param_dict_with_p10_by_joint(
            parameter_dict=params, p10_by_joint=projected
        ),
        **common,
    )
    return _store(identif, "physical consistency", out)


def _store(identif: Any, key: str, value: Dict[str, Any]) -> Dict[str, Any]:
    if getattr(identif, "result", None) is not None:
        identif.result[key] = value
    return value


# ---------------------------------------------------------------------------
# 2. reconstruction
# ---------------------------------------------------------------------------
def _recon_cfg(identif: Any) -> Dict[str, Any]:
    cfg = _cfg(identif).get("reconstruction")
    return dict(cfg) if isinstance(cfg, dict) else {}


def apply_reconstruction_if_enabled(
    identif: Any, identif_results: Dict[str, Any]
) -> Dict[str, Any] | None:
    """``BaseIdentification._apply_reconstruction_if_enabled``.

    Runs when ``reconstruction.enabled`` is set **or** ``select_stage`` is
    ``reconstruction`` (selecting a reconstruction implies computing it).
    Uses ``identif_results["M"]``, ``["params_r"]`` (QR step) and
    ``["phi_base"]`` (the fitted values, WLS included); without them (e.g.
    ``solve_with_custom_solver``) the step is ``skipped``. The
    prior is the nominal ``standard_parameter`` (``prior.source: dict``), the
    model's inertias (``urdf``) or a YAML file (``yaml``). Stores
    ``identif._recon_result`` (None when nothing was reconstructed) and
    returns/stores ``result["reconstruction"]``. The outcome is remembered in
    ``identif_results`` (private key), so a second call with the same results
    — the consistency step may need the reconstruction first — reuses it.
    """
    from figaroh.identification.selection import requested_stage

    cfg = _recon_cfg(identif)
    if not (cfg.get("enabled") or requested_stage(identif) == "reconstruction"):
        return None
    done = identif_results.get(_RECON_DONE)
    if done is not None:  # already run for these results (by the consistency step)
        identif._recon_result = done[1]
        return _store(identif, "reconstruction", done[0])
    out = _reconstruct(identif, identif_results, cfg)
    identif_results[_RECON_DONE] = (out, getattr(identif, "_recon_result", None))
    return out


#: Key under which ``identif_results`` remembers its reconstruction.
_RECON_DONE = "_reconstruction_done"


def _reconstruct(
    identif: Any, identif_results: Dict[str, Any], cfg: Dict[str, Any]
) -> Dict[str, Any]:
    """Body of :func:`apply_reconstruction_if_enabled` (always runs)."""
    out: Dict[str, Any] = {"enabled": True}
    M = identif_results.get("M")
    params_r = identif_results.get("params_r")
    phi = identif_results.get("phi_base")
    if M is None or params_r is None or phi is None:
        identif._recon_result = None
        out.update(status="skipped", reason="M matrix not available; run solve() first")
        return _store(identif, "reconstruction", out)
    try:
        from figaroh.identification.cad_constraints import build_cad_constraints_from_config
        from figaroh.identification.reconstruction import reconstruct_full_parameters
    except ImportError as exc:  # pragma: no cover
        identif._recon_result = None
        out.update(status="unavailable", reason=f"import failed: {exc}")
        return _store(identif, "reconstruction", out)
    method = str(cfg.get("method", "nullspace")).strip().lower()
    prior = cfg.get("prior") or {}
    sdp = cfg.get("sdp") or {}
    weights = cfg.get("weights")
    if isinstance(weights, dict):
        weights = None
    try:
        cad = build_cad_constraints_from_config(
            cfg.get("cad_constraints") or {}, model=identif.model
        )
    except Exception as exc:  # noqa: BLE001
        logger.warning("reconstruction.cad_constraints ignored: %s", exc)
        cad = None
    try:
        res = reconstruct_full_parameters(
            (np.asarray(M, dtype=float), np.asarray(phi, dtype=float), list(params_r)),
            method=method,
            params_std_prior=dict(identif.standard_parameter),
            prior_source=str(prior.get("source", "dict")),
            prior_yaml_path=prior.get("yaml_path"),
            model=identif.model,
            weights=None if weights is None else np.asarray(weights, dtype=float),
            joint_names=_joint_names(identif),
            mass_min=float(cfg.get("mass_min", 1e-6)),
            psd_eig_tol=float(cfg.get("psd_eig_tol", -1e-10)),
            solver=str(sdp.get("solver", "cvxopt")),
            max_seconds=sdp.get("max_seconds"),
            cad_constraints=cad,
        )
    except Exception as exc:  # noqa: BLE001 - bad config / shapes become a status
        identif._recon_result = None
        out.update(status="error", method=method, reason=f"{type(exc).__name__}: {exc}")
        return _store(identif, "reconstruction", out)
    identif._recon_result = res
    out.update(
        status=res.status,
        method=method,
        effective_method=res.effective_method,
        base_residual_norm=res.base_residual_norm,
        objective=res.objective,
        theta_r_dict=res.as_dict(),
        params_r=list(res.params_r),
    )
    return _store(identif, "reconstruction", out)


# ---------------------------------------------------------------------------
# 3.–4. physical fit and selection
# ---------------------------------------------------------------------------
def run_physical_fit_if_wanted(identif: Any) -> Dict[str, Any] | None:
    """Run the direct LMI fit when ``select_stage: physical_fit`` or ``physical_fit.enabled``.

    Sets ``identif._physical_fit`` (the outcome of
    :func:`~figaroh.identification.selection.run_physical_fit`) and
    ``result["physical_fit"] = {status, reason, solvers, psd_eig_tol, record}``.
    """
    from figaroh.identification.selection import physical_fit_wanted, run_physical_fit

    if not physical_fit_wanted(identif):
        return None
    outcome = run_physical_fit(identif)
    identif._physical_fit = outcome
    record = outcome.get("record")
    entry = {
        "status": "accepted" if outcome.get("accepted") else "rejected",
        "reason": outcome.get("reason", ""),
        "solvers": list(outcome.get("solvers") or []),
        "psd_eig_tol": outcome.get("psd_eig_tol"),
        "record": None if record is None else record.as_dict(),
    }
    return _store(identif, "physical_fit", entry)


def selected_fit_rmse(identif: Any, sel: Any) -> Tuple[float | None, Dict[str, float]]:
    """RMSE of a standard-space candidate on the exact fit rows, pooled and per fit joint.

    Prediction ``_solve_W @ values[kept]`` (``kept`` = columns not eliminated).
    """
    if sel is None or sel.values is None or getattr(identif, "_solve_W", None) is None:
        return None, {}
    n = len(sel.values)
    eliminated = {int(i) for i in (identif._idx_eliminated or [])}
    kept = [i for i in range(n) if i not in eliminated]
    W = np.asarray(identif._solve_W, dtype=float)
    if W.shape[1] != len(kept):
        return None, {}
    resid = np.asarray(identif._solve_tau, dtype=float).reshape(-1) - W @ sel.values[kept]
    rmse = float(np.sqrt(np.mean(resid**2)))
    names = list(identif.fit_joints())
    per: Dict[str, float] = {}
    if names and resid.size % len(names) == 0:
        for name, block in zip(names, resid.reshape(len(names), -1), strict=True):
            per[name] = float(np.sqrt(np.mean(block**2)))
    return rmse, per


def select_if_requested(identif: Any) -> Any | None:
    """``identif.selected = select_estimate(identif)`` for ``reconstruction``/``physical_fit``.

    Also stores ``result["selected"]`` (``as_dict()`` + ``effort_rmse_fit`` and
    ``effort_rmse_fit_per_joint``). With the default stage nothing is set.
    """
    from figaroh.identification.selection import requested_stage, select_estimate

    if requested_stage(identif) not in ("reconstruction", "physical_fit"):
        identif.selected = None
        return None
    sel = select_estimate(identif)
    identif.selected = sel
    rmse, per = selected_fit_rmse(identif, sel)
    entry = sel.as_dict()
    entry["effort_rmse_fit"] = rmse
    entry["effort_rmse_fit_per_joint"] = per
    _store(identif, "selected", entry)
    if sel.accepted:
        logger.info("Selected estimate: %s (%s)", sel.stage, sel.reason)
    else:
        logger.warning("The requested %s estimate was rejected: %s", sel.requested, sel.reason)
    return sel


def store_physical_results(identif: Any, identif_results: Dict[str, Any]) -> None:
    """Steps 1–4 in order (call in ``_store_results`` before validation)."""
    apply_physical_consistency_if_enabled(identif, identif_results)
    apply_reconstruction_if_enabled(identif, identif_results)
    run_physical_fit_if_wanted(identif)
    select_if_requested(identif)


def validation_estimate(identif: Any) -> Tuple[np.ndarray | None, str | None]:
    """What validation predicts with: ``(values or None, estimate_stage or None)``.

    Default stage → ``(None, None)`` (base fit, no ``estimate_stage`` key);
    an accepted standard-space selection → ``(values, stage)``; a rejected
    one → ``(None, "fit")`` (never substituted).
    """
    from figaroh.identification.selection import DEFAULT_STAGE, requested_stage

    if requested_stage(identif) == DEFAULT_STAGE:
        return None, None
    sel = getattr(identif, "selected", None)
    if sel is not None and sel.accepted and sel.space == "standard" and sel.values is not None:
        return np.asarray(sel.values, dtype=float), sel.stage
    return None, "fit"


# ---------------------------------------------------------------------------
# Stage record and report lines
# ---------------------------------------------------------------------------
def record_physical_stage(identif: Any) -> None:
    """Record stage ``physical`` (selection > physical fit > consistency > reconstruction).

    * selection of ``physical_fit``: accepted → ``ok``, rejected → ``failed``;
    * selection of ``reconstruction``: accepted → ``ok``; rejected because the
      requested method was swapped (e.g. ``sdp`` requested, ``nullspace``
      used) → ``fallback``; otherwise rejected → ``failed``;
    * ``physical_fit.enabled`` without selection: accepted → ``ok``, else ``failed``;
    * ``physical consistency`` status ``skipped``/``unavailable`` → ``not_run``,
      ``error``/``failed`` → ``failed``, anything else → ``ok``;
    * a reconstruction alone: ``ok`` → ``ok``, otherwise ``fallback``.
    Nothing is recorded when none of them ran.
    """
    from figaroh.tools.stages import record_stage

    result = getattr(identif, "result", None) or {}
    sel = getattr(identif, "selected", None)
    if sel is not None:
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
        record_stage(identif, "physical", status, f"{sel.requested}: {sel.reason}", metrics)
        return
    pf = result.get("physical_fit")
    if pf is not None:
        status = "ok" if pf.get("status") == "accepted" else "failed"
        record_stage(identif, "physical", status, f"physical_fit: {pf.get('reason', '')}")
        return
    pc = result.get("physical consistency")
    if pc is not None:
        st = pc.get("status")
        if st in ("skipped", "unavailable"):
            status = "not_run"
        elif st in ("error", "failed"):
            status = "failed"
        else:
            status = "ok"
        record_stage(identif, "physical", status, str(pc.get("reason") or st))
        return
    rc = result.get("reconstruction")
    if rc is not None:
        st = rc.get("status")
        status = (
            "ok" if st == "ok" else ("not_run" if st in ("skipped", "unavailable") else "fallback")
        )
        reason = rc.get("reason") or f"reconstruction {st} ({rc.get('effective_method')})"
        record_stage(identif, "physical", status, reason)


def consistency_source_label(pc: Dict[str, Any]) -> str:
    """What a ``result["physical consistency"]`` entry checked, for reports."""
    source = pc.get("source")
    if source is None:
        return "nothing identified to check"
    return SOURCE_LABELS.get(str(source), str(source))


def selection_report_lines(identif: Any) -> List[str]:
    """Terminal-report lines for the selected estimate (empty with the default stage)."""
    lines: List[str] = []
    result = getattr(identif, "result", None) or {}
    pc = result.get("physical consistency")
    if pc is not None:
        lines.append(f"Physical consistency ({consistency_source_label(pc)}): {pc.get('status')}")
    sel = getattr(identif, "selected", None)
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


# ---------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------
def export_selected_urdf(
    identif: Any,
    nominal_urdf: str,
    output_path: str | None = None,
    merged_bodies: str = "refuse",
) -> str:
    """Body of ``BaseIdentification.export_urdf``.

    Needs an *accepted* standard-space selection (``reconstruction`` or
    ``physical_fit``); writes ``<key>_<joint>`` for the identified joints
    (``identif._identified_joints()``) with the selection's ``psd_eig_tol``,
    checks the file reloads in Pinocchio and records stage ``export``.

    Raises:
        ValueError: ``"export failed: …"`` — no accepted standard-space
            estimate or the exporter refused (nothing is written).
        FileNotFoundError: missing nominal URDF (recorded, re-raised).
    """
    from figaroh.tools.stages import record_stage
    from figaroh.tools.urdf_exporter import export_urdf

    sel = getattr(identif, "selected", None)
    try:
        if sel is None or sel.space != "standard":
            raise ValueError(
                "the base-parameter fit has no link inertials to export; "
                "set select_stage to 'reconstruction' or 'physical_fit'"
            )
        if not sel.accepted:
            raise ValueError(
                f"the requested {sel.requested} estimate was rejected "
                f"({sel.reason}); nothing to export"
            )
        params: Dict[str, float] = {}
        for joint, p10 in sel.link_p10(identif._identified_joints()).items():
            for key, value in zip(_INERTIAL_KEYS, p10, strict=True):
                params[f"{key}_{joint}"] = float(value)
        out = export_urdf(
            nominal_urdf,
            params,
            output_path=output_path,
            merged_bodies=merged_bodies,
            psd_eig_tol=sel.psd_eig_tol,
        )
        import pinocchio as pin

        try:
            pin.buildModelFromUrdf(str(out))  # the file must load
        except Exception:
            os.remove(out)
            raise
    except (ValueError, KeyError) as exc:
        record_stage(identif, "export", "failed", str(exc))
        identif._refresh_result_stages()
        raise ValueError(f"export failed: {exc}") from exc
    except Exception as exc:  # I/O, Pinocchio reload, ...
        record_stage(identif, "export", "failed", f"{type(exc).__name__}: {exc}")
        identif._refresh_result_stages()
        raise
    record_stage(
        identif,
        "export",
        "ok",
        f"{sel.stage} link inertials written",
        artifacts=[str(out)],
    )
    identif._refresh_result_stages()
    return str(out)
