"""Lazy names of :mod:`figaroh.utils` (read by ``lazy_loader.attach_stub``)."""

from . import (
    config_keys as config_keys,
)
from . import (
    config_migration as config_migration,
)
from . import (
    config_parser as config_parser,
)
from . import (
    cubic_spline as cubic_spline,
)
from . import (
    error_handling as error_handling,
)
from . import (
    fileio as fileio,
)
from . import (
    results_manager as results_manager,
)
from . import (
    unified_config as unified_config,
)
from . import (
    yaml_budget as yaml_budget,
)
from .error_handling import (
    CalibrationError as CalibrationError,
)
from .error_handling import (
    FigarohExampleError as FigarohExampleError,
)
from .error_handling import (
    IdentificationError as IdentificationError,
)
from .error_handling import (
    handle_calibration_errors as handle_calibration_errors,
)
from .error_handling import (
    handle_identification_errors as handle_identification_errors,
)
from .error_handling import (
    setup_example_logging as setup_example_logging,
)
from .error_handling import (
    validate_input_data as validate_input_data,
)
from .results_manager import (
    ResultsManager as ResultsManager,
)
