"""Per-link table of an identified standard-parameter estimate (HTML report block).

For each link with its ten dynamic parameters ``p10 = [m, mx, my, mz, Ixx,
Ixy, Iyy, Ixz, Iyz, Izz]`` (mass [kg], first moments ``h = m·c`` [kg·m],
inertia about the link origin ``I_O`` [kg·m²]) the table shows the mass, the
centre of mass ``c = h/m`` [m], the principal moments of inertia about the
centre of mass (eigenvalues of ``I_C = I_O − (hᵀh·E − hhᵀ)/m``) [kg·m²], the
smallest eigenvalue of the pseudo-inertia ``P = [[½tr(I_O)E − I_O, h], [hᵀ,
m]]`` [kg·m²] and the feasibility verdict (``P ⪰ 0`` within the tolerance the
estimate was judged with). A nominal (URDF) mass, when known, is shown next to
the identified one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence

import numpy as np

from figaroh._run.html import _esc, _fmt
from figaroh.tools.inertia import INERTIAL_KEYS, inertia_matrix_from_p10, pseudo_inertia_explicit

__all__ = ["LinkProperties", "link_properties", "link_table_section", "nominal_link_masses"]


@dataclass(frozen=True)
class LinkProperties:
    """Physical reading of one link's p10.

    Attributes:
        mass: m [kg].
        com: Centre of mass c = h/m [m] (NaN for m = 0).
        principal_moments: Ascending eigenvalues of I_C [kg·m²] (NaN for m = 0).
        pseudo_min_eig: Smallest eigenvalue of the pseudo-inertia [kg·m²].
    """

    mass: float
    com: tuple
    principal_moments: tuple
    pseudo_min_eig: float


def link_properties(p10: Sequence[float]) -> LinkProperties:
    """Mass, centre of mass, principal moments at the CoM and λ_min(P) of a p10.

    Never raises for a finite vector: a zero or negative mass still gives
    ``c = h/m`` (NaN for m = 0), so an infeasible estimate can be shown.

    Raises:
        ValueError: ``p10`` does not hold 10 finite values.
    """
    p = np.asarray(p10, dtype=float).ravel()
    if p.size != 10 or not np.all(np.isfinite(p)):
        raise ValueError(f"p10 must hold 10 finite values, got {p.tolist()}")
    m, h = float(p[0]), p[1:4]
    P = pseudo_inertia_explicit(p)
    min_eig = float(np.linalg.eigvalsh(0.5 * (P + P.T))[0])
    if m == 0.0:
        nan3 = (math.nan,) * 3
        return LinkProperties(m, nan3, nan3, min_eig)
    Ic = inertia_matrix_from_p10(p) - (float(h @ h) * np.eye(3) - np.outer(h, h)) / m
    moments = np.linalg.eigvalsh(0.5 * (Ic + Ic.T))
    return LinkProperties(
        m, tuple(float(v) for v in h / m), tuple(float(v) for v in moments), min_eig
    )


def _link_p10(values: Mapping[str, float], joint: str) -> List[float] | None:
    try:
        return [float(values[f"{k}_{joint}"]) for k in INERTIAL_KEYS]
    except (KeyError, TypeError, ValueError):
        return None


def _triple(values: Sequence[float], spec: str) -> str:
    return ", ".join(_fmt(v, spec) for v in values)


def link_table_section(
    selected: Mapping[str, Any] | None,
    joints: Sequence[str],
    nominal_masses: Mapping[str, float] | None = None,
) -> str:
    """HTML table of the per-link properties of a selected standard-space estimate.

    Args:
        selected: ``result["selected"]`` of an identification (``names``,
            ``values`` with ``<key>_<joint>`` names, ``feasibility`` per link
            ``{mass, min_eig, ok}``, ``stage``, ``status``, ``reason``,
            ``psd_eig_tol``); None when no physical stage produced one.
        joints: Links (joint names) in model order.
        nominal_masses: URDF mass [kg] per joint (optional).

    Returns:
        HTML (``table.link-table`` with one ``tr[data-link]`` per link).
    """
    if not isinstance(selected, Mapping) or not selected.get("values"):
        return (
            '<p class="muted">No per-link estimate: the report shows base parameters only. '
            "Set select_stage: physical_fit (or reconstruction) for physically consistent "
            "link masses, centres of mass and inertias.</p>"
        )
    values = dict(zip(selected.get("names") or [], selected["values"], strict=False))
    feasibility = selected.get("feasibility") or {}
    nominal = nominal_masses or {}
    order = [str(j) for j in joints] or [str(j) for j in feasibility]
    rows = []
    for joint in order:
        p10 = _link_p10(values, joint)
        if p10 is None:
            continue
        try:
            props = link_properties(p10)
        except ValueError:
            continue
        raw_feas = feasibility.get(joint)
        feas = raw_feas if isinstance(raw_feas, Mapping) else {}
        ok = feas.get("ok")
        if ok is None:
            ok = props.mass >= 0 and props.pseudo_min_eig >= float(
                selected.get("psd_eig_tol", -1e-10)
            )
        verdict = (
            '<span class="badge tier-good">feasible</span>'
            if ok
            else '<span class="badge tier-poor">infeasible</span>'
        )
        rows.append(
            f'<tr data-link="{_esc(joint)}"><td>{_esc(joint)}</td><td>{_fmt(props.mass)}</td>'
            f"<td>{_fmt(nominal.get(joint))}</td><td>{_triple(props.com, '.4g')}</td>"
            f"<td>{_triple(props.principal_moments, '.4g')}</td>"
            f"<td>{_fmt(props.pseudo_min_eig, '.3g')}</td><td>{verdict}</td></tr>"
        )
    if not rows:
        return '<p class="muted">The selected estimate holds no complete link parameters.</p>'
    head = (
        f'<p class="muted">Estimate of stage {_esc(selected.get("stage", "?"))} '
        f"({_esc(selected.get('status', '?'))}"
        + (f": {_esc(selected['reason'])}" if selected.get("reason") else "")
        + ").</p>"
    )
    return (
        head + '<table class="data link-table"><thead><tr><th>Link (joint)</th>'
        "<th>Mass [kg]</th><th>URDF mass [kg]</th><th>CoM c = h/m [m] (x, y, z)</th>"
        "<th>Principal moments at CoM [kg·m²]</th><th>λ<sub>min</sub>(pseudo-inertia) "
        "[kg·m²]</th><th>Feasibility</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def nominal_link_masses(model: Any, joints: Sequence[str]) -> Dict[str, float]:
    """URDF mass [kg] of the body each joint moves (``model.inertias[jid].mass``); {} if unknown."""
    out: Dict[str, float] = {}
    names = list(getattr(model, "names", []) or [])
    for joint in joints:
        if joint in names:
            try:
                out[joint] = float(model.inertias[names.index(joint)].mass)
            except (AttributeError, IndexError, TypeError):
                continue
    return out
