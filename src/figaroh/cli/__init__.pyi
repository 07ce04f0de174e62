"""Lazy names of :mod:`figaroh.cli` (read by ``lazy_loader.attach_stub``)."""

from . import (
    bag_command as bag_command,
)
from . import (
    bag_identification as bag_identification,
)
from . import (
    check_command as check_command,
)
from . import (
    common as common,
)
from . import (
    csv_identification as csv_identification,
)
from . import (
    design_commands as design_commands,
)
from . import (
    fleet_command as fleet_command,
)
from . import (
    init_command as init_command,
)
from . import (
    main as main,
)
from . import (
    options as options,
)
from . import (
    progress as progress,
)
from . import (
    run_commands as run_commands,
)
from . import (
    setup_commands as setup_commands,
)
from . import (
    task_commands as task_commands,
)
from . import (
    thresholds as thresholds,
)
from . import (
    view_command as view_command,
)
from . import (
    workflows as workflows,
)
