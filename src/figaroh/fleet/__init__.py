"""Fleet scale: many identification / calibration jobs on Dask, a run index and drift reports.

A factory re-identifies every arm of a line each night to watch friction
drift, a lab runs Monte-Carlo replicates of an estimator over noise seeds, a
trajectory design runs many IPOPT restarts: each is a batch of independent
jobs. This package runs such a batch on Dask distributed (the ``fleet``
extra: ``pip install "figaroh[fleet]"``), archives every finished job as an
immutable run folder, records it in an SQLite run index next to the archive,
and reports parameter drift over time per robot.

Modules (one concept each):

* :mod:`figaroh.fleet.jobs` — :class:`Job` (kind, robot, session, config,
  data, seed, options; :attr:`Job.job_id` hashes the spec and the input
  files' bytes) and :func:`load_batch` (the batch YAML).
* :mod:`figaroh.fleet.inputs` — a job's input files: the driver's hashes
  (and bytes, ``ship_inputs``) carried by each task, verified, read once
  and copied to a private folder where a worker reads them.
* :mod:`figaroh.fleet.worker` — :func:`run_job`, the computation of one job
  (identification, calibration, Monte-Carlo replicate, trajectory restart),
  returning its files and :class:`~figaroh.fleet.record.RunRecord` unwritten.
* :mod:`figaroh.fleet.cluster` — the Dask client: an embedded
  ``LocalCluster``, a scheduler address, or the caller's ``Client``.
* :mod:`figaroh.fleet.runner` — :func:`run_batch` (Dask) and
  :func:`run_serial` (this process): the driver writes every run once.
* :mod:`figaroh.fleet.record` — :class:`RunRecord`, :class:`ParameterEstimate`.
* :mod:`figaroh.fleet.run_index` — :class:`RunIndex` (SQLite: runs,
  failures, batches), :func:`write_fleet_run`, :func:`rebuild_index`; it
  re-exports :mod:`figaroh.fleet.index_schema` (tables, migrations, row
  records), :mod:`figaroh.fleet.index_store` (the database),
  :mod:`figaroh.fleet.run_writer` (the driver's write path) and
  :mod:`figaroh.fleet.index_rebuild`.
* :mod:`figaroh.fleet.archive_lock` — one writer per archive:
  :class:`~figaroh.fleet.archive_lock.ArchiveLock`, :class:`ArchiveLockedError`.
* :mod:`figaroh.fleet.status` — :func:`failure_summary`: what failed, where,
  how often in the last batches.
* :mod:`figaroh.fleet.drift`, :mod:`figaroh.fleet.drift_html` —
  :func:`drift_report` and the self-contained HTML page :func:`write_drift_html`;
  :mod:`figaroh.fleet.drift_records` (the report's records),
  :mod:`figaroh.fleet.drift_comparisons` (the comparisons and flags of one
  quantity), :mod:`figaroh.fleet.drift_scores` (their vectorised statistics),
  :mod:`figaroh.fleet.parameter_identity` (which parameters are the same
  quantity across runs), :mod:`figaroh.fleet.drift_fdr` (the
  false-discovery-rate decision) and :mod:`figaroh.fleet.history_window`
  (the ``since`` / ``last N`` sessions window, read with SQL).

Example:
    ```python
    from figaroh.fleet import load_batch, run_batch

    result = run_batch(load_batch("batch.yaml"), archive_root="results/fleet", n_workers=2)
    print(result.summary())
    ```

The names declared in :file:`__init__.pyi` are imported on first access, so
``import figaroh.fleet`` (and its light modules, e.g. :mod:`figaroh.fleet.record`)
does not import the identification stack nor Dask.
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
