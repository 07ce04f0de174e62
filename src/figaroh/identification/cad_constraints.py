"""CAD-informed bounds for physically consistent reconstruction and projection.

A :class:`CADConstraints` holds, per joint (= per link body):

* ``mass_bounds[joint] = (lo, hi)`` on the mass [kg];
* ``com_bounds[joint] = {"x"|"y"|"z": (lo, hi)}`` on the first moments
  ``h = m·c`` [kg·m] (not on CoM coordinates: the bound stays linear in the
  identified parameters);
* ``symmetry_pairs = [(joint_a, joint_b, keys)]``: equal parameters of two
  mirrored links (e.g. left/right legs).

YAML form (``reconstruction.cad_constraints`` or
``physical_consistency.cad_constraints``)::

    cad_constraints:
      source: urdf                      # start from bounds around the URDF values
      mass_bounds: {joint1: [0.5, 5.0]}
      com_bounds: {joint1: {x: [-0.2, 0.2]}}
      symmetry_pairs: [[left_joint, right_joint, [m, Ixx, Iyy, Izz]]]
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from figaroh.identification._conic import ConeProgram
from figaroh.identification.physical_consistency import INERTIAL_KEYS

logger = logging.getLogger(__name__)

__all__ = [
    "CADConstraints",
    "add_com_bounds",
    "add_mass_bounds",
    "add_symmetry_constraints",
    "apply_cad_constraints_to_problem",
    "bounds_from_urdf",
    "build_cad_constraints_from_config",
    "cad_constraint_rows",
]

_AXES = ("x", "y", "z")
_BOUND_KEYS = ("mass_bounds", "com_bounds", "symmetry_pairs", "source")


@dataclass
class CADConstraints:
    """Bounds and symmetries from CAD knowledge (see the module docstring).

    Attributes:
        mass_bounds: ``{joint: (lo, hi)}`` [kg].
        com_bounds: ``{joint: {axis: (lo, hi)}}`` on ``h`` [kg·m].
        symmetry_pairs: ``[(joint_a, joint_b, keys)]`` with ``keys`` a tuple of
            inertial keys (``m``, ``mx``, …).
    """

    mass_bounds: Dict[str, Tuple[float, float]] = field(default_factory=dict)
    com_bounds: Dict[str, Dict[str, Tuple[float, float]]] = field(default_factory=dict)
    symmetry_pairs: List[Tuple[str, str, Tuple[str, ...]]] = field(default_factory=list)

    def is_empty(self) -> bool:
        """True when no bound and no symmetry is set."""
        return not (self.mass_bounds or self.com_bounds or self.symmetry_pairs)

    def __repr__(self) -> str:
        return (
            f"CADConstraints(mass_bounds={len(self.mass_bounds)} joints, "
            f"com_bounds={len(self.com_bounds)} joints, "
            f"symmetry_pairs={len(self.symmetry_pairs)})"
        )


def _interval(lo: Any, hi: Any, what: str) -> Tuple[float, float]:
    try:
        a, b = float(lo), float(hi)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: bounds must be numbers, got ({lo!r}, {hi!r})") from exc
    if not (np.isfinite(a) and np.isfinite(b)):
        raise ValueError(f"{what}: bounds must be finite, got ({a}, {b})")
    if a > b:
        raise ValueError(f"{what}: lower bound {a} > upper bound {b}")
    return a, b


def add_mass_bounds(
    cad: CADConstraints, joint_name: str, *, m_min: float, m_max: float
) -> CADConstraints:
    """Set ``m_min ≤ m_<joint_name> ≤ m_max`` [kg] (replacing an earlier bound).

    Args:
        cad: Constraints to edit in place.
        joint_name: Joint whose body (link) is bounded.
        m_min: Lower mass bound [kg].
        m_max: Upper mass bound [kg].

    Returns:
        ``cad`` itself, so calls can be chained.

    Raises:
        ValueError: ``m_min > m_max`` or non-finite bounds.
    """
    cad.mass_bounds[str(joint_name)] = _interval(m_min, m_max, f"mass_bounds[{joint_name!r}]")
    return cad


def add_com_bounds(
    cad: CADConstraints, joint_name: str, *, axis: str, h_min: float, h_max: float
) -> CADConstraints:
    """Set ``h_min ≤ h_axis ≤ h_max`` on a first moment ``h = m·c`` [kg·m].

    Args:
        cad: Constraints to edit in place.
        joint_name: Joint whose body (link) is bounded.
        axis: ``"x"``, ``"y"`` or ``"z"``.
        h_min: Lower bound [kg·m].
        h_max: Upper bound [kg·m].

    Returns:
        ``cad`` itself, so calls can be chained.

    Raises:
        ValueError: ``axis`` not in x/y/z, or ``h_min > h_max``.
    """
    if axis not in _AXES:
        raise ValueError(f"com_bounds axis must be one of {_AXES}, got {axis!r}")
    cad.com_bounds.setdefault(str(joint_name), {})[axis] = _interval(
        h_min, h_max, f"com_bounds[{joint_name!r}][{axis!r}]"
    )
    return cad


def add_symmetry_constraints(
    cad: CADConstraints, joint_a: str, joint_b: str, *, keys: Sequence[str] | None = None
) -> CADConstraints:
    """Require ``<key>_<joint_a> == <key>_<joint_b>`` for ``keys`` (default: all ten).

    Returns:
        ``cad`` itself, so calls can be chained.

    Raises:
        ValueError: an unknown inertial key.
    """
    keys = tuple(INERTIAL_KEYS if keys is None else keys)
    unknown = [k for k in keys if k not in INERTIAL_KEYS]
    if unknown:
        raise ValueError(f"unknown inertial keys {unknown}; allowed: {list(INERTIAL_KEYS)}")
    cad.symmetry_pairs.append((str(joint_a), str(joint_b), keys))
    return cad


def bounds_from_urdf(
    model: Any,
    *,
    mass_scale_min: float = 0.01,
    mass_scale_max: float = 100.0,
    com_margin_abs: float = 1.0,
    com_margin_rel: float = 10.0,
) -> CADConstraints:
    """Loose bounds around the model's nominal inertias (every joint of ``model.names[1:]``).

    ``m ∈ [max(mass_scale_min·m0, 1e-6), mass_scale_max·m0]`` (``hi = lo + 1``
    when that interval is empty) and per axis
    ``h_k ∈ h0_k ± max(|h0_k|·com_margin_rel, com_margin_abs)`` with
    ``h0 = m0·lever``.

    Args:
        model: Pinocchio model.
        mass_scale_min: Lower mass factor.
        mass_scale_max: Upper mass factor.
        com_margin_abs: Absolute first-moment margin [kg·m].
        com_margin_rel: Relative first-moment margin.
    """
    cad = CADConstraints()
    for jid in range(1, model.njoints):
        name = model.names[jid]
        inertia = model.inertias[jid]
        m0 = float(inertia.mass)
        lo = max(mass_scale_min * m0, 1e-6)
        hi = mass_scale_max * m0
        if hi <= lo:
            hi = lo + 1.0
        cad.mass_bounds[name] = (lo, hi)
        h0 = m0 * np.asarray(inertia.lever, dtype=float)
        cad.com_bounds[name] = {
            ax: (
                float(h0[k] - max(abs(h0[k]) * com_margin_rel, com_margin_abs)),
                float(h0[k] + max(abs(h0[k]) * com_margin_rel, com_margin_abs)),
            )
            for k, ax in enumerate(_AXES)
        }
    return cad


def _pair(value: Any, default_lo: float, default_hi: float, what: str) -> Tuple[float, float]:
    if isinstance(value, Mapping):
        unknown = set(value) - {"min", "max"}
        if unknown:
            raise ValueError(f"{what}: unknown keys {sorted(unknown)} (use min/max)")
        return _interval(value.get("min", default_lo), value.get("max", default_hi), what)
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return _interval(value[0], value[1], what)
    raise ValueError(f"{what}: expected [lo, hi] or {{min, max}}, got {value!r}")


def build_cad_constraints_from_config(
    cfg: Mapping[str, Any] | None, *, model: Any = None
) -> CADConstraints | None:
    """Build :class:`CADConstraints` from a config mapping (see the module docstring).

    Args:
        cfg: ``{source, mass_bounds, com_bounds, symmetry_pairs}``; empty/None → None.
        model: Pinocchio model, required by ``source: urdf``.

    Returns:
        The constraints, or None when nothing was configured.

    Raises:
        ValueError: unknown keys, malformed bounds, ``source: urdf`` without a model.
    """
    if not cfg:
        return None
    if not isinstance(cfg, Mapping):
        raise ValueError(f"cad_constraints must be a mapping, got {type(cfg).__name__}")
    unknown = set(cfg) - set(_BOUND_KEYS)
    if unknown:
        raise ValueError(
            f"cad_constraints: unknown keys {sorted(unknown)}; allowed: {list(_BOUND_KEYS)}"
        )
    source = cfg.get("source")
    if source is not None and str(source).lower() != "urdf":
        raise ValueError(f"cad_constraints.source must be 'urdf' or absent, got {source!r}")
    if source is not None:
        if model is None:
            raise ValueError("cad_constraints.source: urdf needs the robot model")
        cad = bounds_from_urdf(model)
    else:
        cad = CADConstraints()
    for joint, value in (cfg.get("mass_bounds") or {}).items():
        lo, hi = _pair(value, 0.0, 1e9, f"cad_constraints.mass_bounds[{joint!r}]")
        add_mass_bounds(cad, joint, m_min=lo, m_max=hi)
    for joint, axes in (cfg.get("com_bounds") or {}).items():
        if not isinstance(axes, Mapping):
            raise ValueError(
                f"cad_constraints.com_bounds[{joint!r}] must map x/y/z to bounds, got {axes!r}"
            )
        for axis, value in axes.items():
            lo, hi = _pair(value, -1e9, 1e9, f"cad_constraints.com_bounds[{joint!r}][{axis!r}]")
            add_com_bounds(cad, joint, axis=str(axis), h_min=lo, h_max=hi)
    for entry in cfg.get("symmetry_pairs") or []:
        if not isinstance(entry, (list, tuple)) or len(entry) not in (2, 3):
            raise ValueError(
                f"cad_constraints.symmetry_pairs entries are [a, b] or [a, b, [keys]], "
                f"got {entry!r}"
            )
        keys = entry[2] if len(entry) == 3 else None
        add_symmetry_constraints(cad, entry[0], entry[1], keys=keys)
    return None if cad.is_empty() else cad


def cad_constraint_rows(
    params_r: Sequence[str], cad: CADConstraints | None
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Linear rows of ``cad`` over a parameter vector ordered like ``params_r``.

    Returns:
        ``(G, h, A, b)`` with ``G θ ≤ h`` (mass and first-moment bounds) and
        ``A θ = b`` (symmetries); names absent from ``params_r`` are skipped.
    """
    n = len(params_r)
    index = {name: i for i, name in enumerate(params_r)}
    G, h, A, b = [], [], [], []

    def bound(name: str, lo: float, hi: float) -> None:
        i = index.get(name)
        if i is None:
            return
        for sign, val in ((-1.0, -lo), (1.0, hi)):
            row = np.zeros(n)
            row[i] = sign
            G.append(row)
            h.append(val)

    if cad is not None:
        for joint, (lo, hi) in cad.mass_bounds.items():
            bound(f"m_{joint}", lo, hi)
        for joint, axes in cad.com_bounds.items():
            for axis, (lo, hi) in axes.items():
                bound(f"m{axis}_{joint}", lo, hi)
        for ja, jb, keys in cad.symmetry_pairs:
            for key in keys:
                ia, ib = index.get(f"{key}_{ja}"), index.get(f"{key}_{jb}")
                if ia is None or ib is None:
                    continue
                row = np.zeros(n)
                row[ia], row[ib] = 1.0, -1.0
                A.append(row)
                b.append(0.0)
    return (
        np.array(G).reshape(-1, n),
        np.array(h, dtype=float),
        np.array(A).reshape(-1, n),
        np.array(b, dtype=float),
    )


def apply_cad_constraints_to_problem(
    problem: Any, theta: Any, params_r: Sequence[str], cad: CADConstraints | None
) -> int:
    """Add ``cad`` to a problem over ``theta`` (ordered like ``params_r``).

    ``problem`` is either a PICOS problem with ``theta`` a PICOS vector
    variable, or a :class:`figaroh.identification._conic.ConeProgram` (then
    ``theta`` is an affine map ``(T, t0)`` with ``θ = T x + t0``, or None for
    ``θ = x``).

    Returns:
        Number of scalar constraints added.
    """
    G, h, A, b = cad_constraint_rows(params_r, cad)
    count = G.shape[0] + A.shape[0]
    if count == 0:
        return 0

    if isinstance(problem, ConeProgram):
        if theta is None:
            T, t0 = np.eye(len(params_r)), np.zeros(len(params_r))
        else:
            T, t0 = theta
        if G.shape[0]:
            problem.add_inequalities(G @ T, h - G @ t0)
        if A.shape[0]:
            problem.add_equalities(A @ T, b - A @ t0)
        return count
    import picos

    if G.shape[0]:
        problem.add_constraint(picos.Constant(G) * theta <= picos.Constant(h))
    if A.shape[0]:
        problem.add_constraint(picos.Constant(A) * theta == picos.Constant(b))
    return count
