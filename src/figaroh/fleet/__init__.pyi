"""Lazy names of :mod:`figaroh.fleet` (read by ``lazy_loader.attach_stub``)."""

from . import (
    archive_lock as archive_lock,
)
from . import (
    cluster as cluster,
)
from . import (
    drift as drift,
)
from . import (
    drift_fdr as drift_fdr,
)
from . import (
    drift_html as drift_html,
)
from . import (
    history_window as history_window,
)
from . import (
    inputs as inputs,
)
from . import (
    jobs as jobs,
)
from . import (
    parameter_identity as parameter_identity,
)
from . import (
    record as record,
)
from . import (
    run_index as run_index,
)
from . import (
    runner as runner,
)
from . import (
    status as status,
)
from . import (
    worker as worker,
)
from .archive_lock import (
    ArchiveLockedError as ArchiveLockedError,
)
from .drift import (
    drift_report as drift_report,
)
from .drift_html import (
    write_drift_html as write_drift_html,
)
from .jobs import (
    JOB_KINDS as JOB_KINDS,
)
from .jobs import (
    FleetConfigError as FleetConfigError,
)
from .jobs import (
    Job as Job,
)
from .jobs import (
    load_batch as load_batch,
)
from .record import (
    ParameterEstimate as ParameterEstimate,
)
from .record import (
    RunRecord as RunRecord,
)
from .run_index import (
    RunIndex as RunIndex,
)
from .run_index import (
    rebuild_index as rebuild_index,
)
from .run_index import (
    write_fleet_run as write_fleet_run,
)
from .runner import (
    BatchResult as BatchResult,
)
from .runner import (
    JobFailure as JobFailure,
)
from .runner import (
    run_batch as run_batch,
)
from .runner import (
    run_serial as run_serial,
)
from .status import (
    failure_summary as failure_summary,
)
from .worker import (
    JobOutput as JobOutput,
)
from .worker import (
    run_job as run_job,
)
