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

from figaroh.identification._pipeline.physical import urdf_parameters
from figaroh.tools.stages import record_stage
from figaroh.tools.urdf_exporter import export_urdf

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


def export_selected_urdf(
    owner: Any,
    nominal_urdf: str,
    output_path: str | None = None,
    merged_bodies: str = "refuse",
) -> str:
    """Write the accepted selection of ``owner`` (a solved ``BaseIdentification``) into a URDF.

    Needs an *accepted* standard-space selection (``reconstruction`` or
    ``physical_fit``); writes ``<key>_<joint>`` for the identified joints with
    the selection's ``psd_eig_tol``, checks the file reloads in Pinocchio and
    records stage ``export``.

    Raises:
        ValueError: ``"export failed: …"`` — no accepted standard-space
            estimate or the exporter refused (nothing is written).
        FileNotFoundError: missing nominal URDF (recorded, re-raised).
    """
    sel = getattr(owner, "selected", None)
    try:
        params = urdf_parameters(sel, owner._identified_joints())
        out = _write_checked_urdf(nominal_urdf, params, output_path, merged_bodies, sel.psd_eig_tol)
    except (ValueError, KeyError) as exc:
        record_stage(owner, "export", "failed", str(exc))
        owner._refresh_result_stages()
        raise ValueError(f"export failed: {exc}") from exc
    except Exception as exc:  # I/O, Pinocchio reload, ...
        record_stage(owner, "export", "failed", f"{type(exc).__name__}: {exc}")
        owner._refresh_result_stages()
        raise
    record_stage(owner, "export", "ok", f"{sel.stage} link inertials written", artifacts=[out])
    owner._refresh_result_stages()
    return out
