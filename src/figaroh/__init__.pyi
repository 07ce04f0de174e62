"""Lazy names of :mod:`figaroh` (read by ``lazy_loader.attach_stub``)."""

__version__: str

from . import (
    backends as backends,
)
from . import (
    calibration as calibration,
)
from . import (
    cli as cli,
)
from . import (
    data as data,
)
from . import (
    errors as errors,
)
from . import (
    fleet as fleet,
)
from . import (
    identification as identification,
)
from . import (
    integration as integration,
)
from . import (
    measurements as measurements,
)
from . import (
    optimal as optimal,
)
from . import (
    tools as tools,
)
from . import (
    utils as utils,
)
from . import (
    visualisation as visualisation,
)
