"""Lazy names of :mod:`figaroh.tools` (read by ``lazy_loader.attach_stub``)."""

from . import (
    compare_report as compare_report,
)
from . import (
    effort_units as effort_units,
)
from . import (
    exceptions as exceptions,
)
from . import (
    export_validation as export_validation,
)
from . import (
    geometric_calibration_export as geometric_calibration_export,
)
from . import (
    identification_report as identification_report,
)
from . import (
    inertia as inertia,
)
from . import (
    joint_terms as joint_terms,
)
from . import (
    load_robot as load_robot,
)
from . import (
    provenance as provenance,
)
from . import (
    qrdecomposition as qrdecomposition,
)
from . import (
    randomdata as randomdata,
)
from . import (
    regressor as regressor,
)
from . import (
    report as report,
)
from . import (
    robot as robot,
)
from . import (
    robot_paths as robot_paths,
)
from . import (
    robotcollisions as robotcollisions,
)
from . import (
    robotipopt as robotipopt,
)
from . import (
    robotvisualization as robotvisualization,
)
from . import (
    run_archive as run_archive,
)
from . import (
    solver as solver,
)
from . import (
    stages as stages,
)
from . import (
    urdf_exporter as urdf_exporter,
)
from . import (
    validation_viewer as validation_viewer,
)
