"""Dynamic parameter identification.

* :class:`~figaroh.identification.base_identification.BaseIdentification` — the
  workflow (data → regressor → base parameters → validation → report);
* :mod:`~figaroh.identification.identification_tools` and
  :mod:`~figaroh.identification.parameter` — standard parameters, friction,
  actuator inertia, offsets;
* :mod:`~figaroh.identification.config` — ``identif_config`` parsers;
* :mod:`~figaroh.identification.physical_consistency` — feasibility checks and
  LMI projection of link inertials;
* :mod:`~figaroh.identification.reconstruction` — base → full parameters;
* :mod:`~figaroh.identification.cad_constraints` — CAD mass / first-moment /
  symmetry bounds;
* :mod:`~figaroh.identification.physical_fit` and
  :mod:`~figaroh.identification.selection` — direct physically consistent fit
  and the choice of the reported estimate.

The names below are importable from the package itself; they are resolved on
first access, so ``import figaroh.identification`` stays cheap and free of
import cycles.
"""

from __future__ import annotations

from figaroh.utils._lazy import lazy_reexports

_BASE = "figaroh.identification.base_identification"
_CAD = "figaroh.identification.cad_constraints"
_PC = "figaroh.identification.physical_consistency"
_REC = "figaroh.identification.reconstruction"

_LAZY = {
    "BaseIdentification": _BASE,
    "BaseResult": _REC,
    "CADConstraints": _CAD,
    "ProjectionReport": _PC,
    "ReconstructionResult": _REC,
    "RobotProjectionReport": _PC,
    "add_com_bounds": _CAD,
    "add_mass_bounds": _CAD,
    "add_symmetry_constraints": _CAD,
    "bounds_from_urdf": _CAD,
    "build_cad_constraints_from_config": _CAD,
    "check_p10_feasibility": _PC,
    "is_feasible_link": _PC,
    "p10_by_joint_from_param_dict": _PC,
    "param_dict_with_p10_by_joint": _PC,
    "prior_vector_from_dict": _REC,
    "project_link": _PC,
    "project_p10_lmi": _PC,
    "project_robot_p10_lmi": _PC,
    "pseudo_inertia_matrix_from_p10": _PC,
    "reconstruct_from_base": _REC,
    "reconstruct_full_parameters": _REC,
    "reconstruct_theta_r": _REC,
    "run_option_a_reconstruction": _REC,
    "run_reconstruction": _REC,
}

__all__ = [
    # Re-exported for figaroh 1.0.2 compatibility.
    "BaseIdentification",
    "BaseResult",
    "CADConstraints",
    "ProjectionReport",
    "ReconstructionResult",
    "RobotProjectionReport",
    "add_com_bounds",
    "add_mass_bounds",
    "add_symmetry_constraints",
    "bounds_from_urdf",
    "build_cad_constraints_from_config",
    "check_p10_feasibility",
    "is_feasible_link",
    "p10_by_joint_from_param_dict",
    "param_dict_with_p10_by_joint",
    "prior_vector_from_dict",
    "project_link",
    "project_p10_lmi",
    "project_robot_p10_lmi",
    "pseudo_inertia_matrix_from_p10",
    "reconstruct_from_base",
    "reconstruct_full_parameters",
    "reconstruct_theta_r",
    "run_option_a_reconstruction",
    "run_reconstruction",
]


__getattr__, __dir__ = lazy_reexports(__name__, _LAZY, globals())
