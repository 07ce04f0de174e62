"""Deprecated alias of :mod:`figaroh.identification.physical_fit` (kept for old imports).

The module was promoted to :mod:`figaroh.identification.physical_fit`;
every public and private name used by earlier callers is re-exported here.
"""

from figaroh.identification.physical_fit import (  # noqa: F401
    ComparatorProblem,
    FixedExtras,
    PhysicalPolicy,
    SolveRecord,
    _coord_scale,
    _inputs_hash,
    _link_indices,
    _make_record,
    _mass_bounds,
    _solve_core,
    build_problem,
    diagnose_exact,
    solve_direct_effort_fit,
    solve_exact_reconstruction,
    solve_per_link_projection,
)

__all__ = [
    "ComparatorProblem",
    "FixedExtras",
    "PhysicalPolicy",
    "SolveRecord",
    "build_problem",
    "diagnose_exact",
    "solve_direct_effort_fit",
    "solve_exact_reconstruction",
    "solve_per_link_projection",
]
