"""URDF export of the selected estimate (body of ``BaseIdentification.export_urdf``).

The physical steps themselves (consistency, reconstruction, physical fit,
selection) are record-to-record functions in
:mod:`figaroh.identification._pipeline.physical`; this module only writes the
accepted standard-space estimate into a URDF and records stage ``export`` on
the run that asked for it.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import pinocchio as pin

from figaroh.identification._pipeline.physical import exportable_selection, urdf_parameters
from figaroh.tools.joint_terms import enabled_terms
from figaroh.tools.stages import record_stage
from figaroh.tools.urdf_exporter import export_urdf, joint_term_parameters

logger = logging.getLogger(__name__)

__all__ = ["export_selected_urdf"]


def _write_checked_urdf(nominal_urdf: str, params: dict, output_path, merged_bodies, tol) -> str:
    """Write the URDF and check it reloads in Pinocchio (the file is removed otherwise)."""
    out = export_urdf(
        nominal_urdf,
        params,
        output_path=output_path,
        merged_bodies=merged_bodies,
        psd_eig_tol=tol,
    )
    try:
        pin.buildModelFromUrdf(str(out))  # the file must load
    except Exception:
        os.remove(out)
        raise
    return str(out)


def _identified_joint_terms(identif_config: Any) -> tuple[str, ...]:
    """Prefixes of the exported joint terms the configuration identified (fv, fs, Ia, ...)."""
    return tuple(t.prefix for t in enabled_terms(identif_config) if t.exported)


def export_selected_urdf(
    owner: Any,
    nominal_urdf: str,
    output_path: str | None = None,
    merged_bodies: str = "refuse",
    joint_dynamics: bool = True,
) -> str:
    """Write the accepted selection of ``owner`` (a solved ``BaseIdentification``) into a URDF.

    Needs an *accepted* standard-space selection (``reconstruction`` or
    ``physical_fit``); writes ``<key>_<joint>`` for the identified joints with
    the selection's ``psd_eig_tol``, checks the file reloads in Pinocchio and
    records stage ``export``. With ``joint_dynamics`` the identified joint
    terms of the identified joints — the rows of
    :data:`figaroh.tools.joint_terms.JOINT_TERMS` marked ``exported`` whose
    flag the configuration enabled: viscous friction ``fv`` [N·m·s/rad],
    Coulomb friction ``fs`` [N·m] (``has_friction``), actuator inertia ``Ia``
    [kg·m²] (``has_actuator_inertia``) — are written, joint-side, into their
    ``urdf_element``/``urdf_attribute`` (``<dynamics damping friction
    armature>``); without it only link inertials are written (figaroh
    1.0.2's file).

    Raises:
        ValueError: ``"export failed: …"`` — no accepted standard-space
            estimate or the exporter refused (nothing is written).
        FileNotFoundError: missing nominal URDF (recorded, re-raised).
    """
    try:
        joints = owner._identified_joints()
        sel = exportable_selection(getattr(owner, "selected", None))
        params = urdf_parameters(sel, joints)
        terms = _identified_joint_terms(owner.identif_config) if joint_dynamics else ()
        if terms:
            params.update(joint_term_parameters(sel.parameter_dict(), joints, prefixes=terms))
        out = _write_checked_urdf(nominal_urdf, params, output_path, merged_bodies, sel.psd_eig_tol)
    except (ValueError, KeyError) as exc:
        record_stage(owner, "export", "failed", str(exc))
        owner._refresh_result_stages()
        raise ValueError(f"export failed: {exc}") from exc
    except Exception as exc:  # I/O, Pinocchio reload, ...
        record_stage(owner, "export", "failed", f"{type(exc).__name__}: {exc}")
        owner._refresh_result_stages()
        raise
    written = "link inertials and joint dynamics" if terms else "link inertials"
    record_stage(owner, "export", "ok", f"{sel.stage} {written} written", artifacts=[out])
    owner._refresh_result_stages()
    return out
