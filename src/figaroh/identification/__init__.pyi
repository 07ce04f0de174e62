"""Lazy names of :mod:`figaroh.identification` (read by ``lazy_loader.attach_stub``)."""

from . import (
    _pipeline_physical as _pipeline_physical,
)
from . import (
    _verification as _verification,
)
from . import (
    base_identification as base_identification,
)
from . import (
    cad_constraints as cad_constraints,
)
from . import (
    config as config,
)
from . import (
    essential as essential,
)
from . import (
    exceptions as exceptions,
)
from . import (
    identification_tools as identification_tools,
)
from . import (
    parameter as parameter,
)
from . import (
    physical_consistency as physical_consistency,
)
from . import (
    physical_fit as physical_fit,
)
from . import (
    quality_report as quality_report,
)
from . import (
    reconstruction as reconstruction,
)
from . import (
    selection as selection,
)
from . import (
    settings as settings,
)
from .base_identification import (
    BaseIdentification as BaseIdentification,
)
from .cad_constraints import (
    CADConstraints as CADConstraints,
)
from .cad_constraints import (
    add_com_bounds as add_com_bounds,
)
from .cad_constraints import (
    add_mass_bounds as add_mass_bounds,
)
from .cad_constraints import (
    add_symmetry_constraints as add_symmetry_constraints,
)
from .cad_constraints import (
    bounds_from_urdf as bounds_from_urdf,
)
from .cad_constraints import (
    build_cad_constraints_from_config as build_cad_constraints_from_config,
)
from .physical_consistency import (
    ProjectionReport as ProjectionReport,
)
from .physical_consistency import (
    RobotProjectionReport as RobotProjectionReport,
)
from .physical_consistency import (
    check_p10_feasibility as check_p10_feasibility,
)
from .physical_consistency import (
    is_feasible_link as is_feasible_link,
)
from .physical_consistency import (
    p10_by_joint_from_param_dict as p10_by_joint_from_param_dict,
)
from .physical_consistency import (
    param_dict_with_p10_by_joint as param_dict_with_p10_by_joint,
)
from .physical_consistency import (
    project_link as project_link,
)
from .physical_consistency import (
    project_p10_lmi as project_p10_lmi,
)
from .physical_consistency import (
    project_robot_p10_lmi as project_robot_p10_lmi,
)
from .physical_consistency import (
    pseudo_inertia_matrix_from_p10 as pseudo_inertia_matrix_from_p10,
)
from .reconstruction import (
    BaseResult as BaseResult,
)
from .reconstruction import (
    ReconstructionResult as ReconstructionResult,
)
from .reconstruction import (
    prior_vector_from_dict as prior_vector_from_dict,
)
from .reconstruction import (
    reconstruct_from_base as reconstruct_from_base,
)
from .reconstruction import (
    reconstruct_full_parameters as reconstruct_full_parameters,
)
from .reconstruction import (
    reconstruct_theta_r as reconstruct_theta_r,
)
from .reconstruction import (
    run_option_a_reconstruction as run_option_a_reconstruction,
)
from .reconstruction import (
    run_reconstruction as run_reconstruction,
)
