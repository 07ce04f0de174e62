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
    drift_comparisons as drift_comparisons,
)
from . import (
    drift_fdr as drift_fdr,
)
from . import (
    drift_html as drift_html,
)
from . import (
    drift_records as drift_records,
)
from . import (
    drift_scores as drift_scores,
)
from . import (
    history_window as history_window,
)
from . import (
    index_rebuild as index_rebuild,
)
from . import (
    index_schema as index_schema,
)
from . import (
    index_store as index_store,
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
    run_writer as run_writer,
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
