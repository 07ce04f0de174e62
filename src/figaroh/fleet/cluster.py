"""The Dask client a fleet batch runs on: an embedded cluster, an address, or the caller's client.

``distributed`` (the ``fleet`` extra) is imported by :func:`dask_client`
only, so ``import figaroh.fleet`` works without it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any, Dict, Iterator, List, Mapping

from figaroh._optional import require
from figaroh.errors import FigarohError, MissingDependencyError

logger = logging.getLogger(__name__)

__all__ = [
    "JOB_RESOURCES",
    "LOOPBACK",
    "WORKER_ENV",
    "MissingWorkerResourceError",
    "dask_client",
    "embedded_resources",
    "require_distributed",
    "workers_with",
]

#: Dask worker resources a task of each job kind holds while it runs
#: (``client.submit(..., resources=...)``): a trajectory job (IPOPT) runs
#: only on a worker that advertises ``ipopt`` (``dask worker ...
#: --resources ipopt=1``; the embedded cluster's workers do when cyipopt is
#: installed). The other kinds run on any worker.
JOB_RESOURCES: Mapping[str, Mapping[str, float]] = {"trajectory": {"ipopt": 1}}


class MissingWorkerResourceError(FigarohError):
    """No worker of the cluster advertises a resource that a job kind needs."""


#: Interface of every socket of the embedded cluster (scheduler, workers,
#: nannies and the optional dashboard): the loopback, so that no other host
#: can reach it.
LOOPBACK = "127.0.0.1"

#: Dask configuration of a cluster started without the dashboard: the HTTP
#: servers of the scheduler and of the workers serve ``/health`` only (no
#: dashboard, no cluster information pages, no metrics, no proxy).
_HEALTH_ONLY = {
    "distributed.scheduler.http.routes": ["distributed.http.health"],
    "distributed.worker.http.routes": ["distributed.http.health"],
}

#: Environment of the embedded cluster's worker processes: one BLAS/OpenMP
#: thread each, so that a job gives bit-identical sums on a worker and serially
#: and two workers do not oversubscribe the cores.
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}


def require_distributed() -> Any:
    """The ``distributed`` module.

    Raises:
        figaroh.errors.MissingDependencyError: not installed; the message says
            ``pip install "figaroh[fleet]"``.
    """
    return require(
        "distributed", extra="fleet", purpose="Running a fleet batch on Dask", package="distributed"
    )


def embedded_resources() -> Dict[str, float]:
    """Resources of the embedded cluster's workers: ``{"ipopt": 1}`` when cyipopt imports."""
    try:
        require("cyipopt", extra="ipopt", purpose="IPOPT trajectory jobs")
    except MissingDependencyError:
        return {}
    return {"ipopt": 1}


def workers_with(client: Any, resources: Mapping[str, float] | None = None) -> List[str]:
    """Addresses of the client's workers that advertise at least ``resources``.

    Args:
        client: A ``distributed.Client``.
        resources: Resource name → amount a task needs (None or empty: any worker).

    Returns:
        The worker addresses, sorted.
    """
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    need = dict(resources or {})
    return sorted(
        address
        for address, info in workers.items()
        if all(float((info.get("resources") or {}).get(k, 0)) >= v for k, v in need.items())
    )


@contextlib.contextmanager
def dask_client(
    scheduler: Any = None, n_workers: int | None = None, *, dashboard: bool = False
) -> Iterator[Any]:
    """A ``distributed.Client`` for the duration of the block.

    Args:
        scheduler: None — start an embedded ``LocalCluster`` of ``n_workers``
            worker processes, one thread each, every socket on
            ``127.0.0.1`` and no dashboard unless ``dashboard`` (closed on exit);
            its workers advertise :func:`embedded_resources`;
            a scheduler address such as ``"tcp://host:8786"`` — connect to it
            (the connection is closed on exit, the cluster keeps running);
            a ``distributed.Client`` — used as it is and left open.
        n_workers: Worker processes of the embedded cluster (None:
            ``os.cpu_count()``); ignored for an address or a client.
        dashboard: Serve the embedded scheduler's dashboard (Dask's default
            HTTP routes: the Bokeh dashboard when ``bokeh`` is installed,
            cluster information pages, Prometheus metrics) on
            ``127.0.0.1:<free port>``, its address logged. Without it the
            scheduler's and workers' HTTP servers (which distributed always
            starts) answer ``/health`` only, on loopback ports. Ignored for an
            address or a client.

    Yields:
        The client.

    Raises:
        figaroh.errors.MissingDependencyError: ``distributed`` is not installed.
        OSError: the scheduler address cannot be reached.
    """
    distributed = require_distributed()
    if isinstance(scheduler, distributed.Client):
        yield scheduler
        return
    if scheduler is not None:
        with distributed.Client(str(scheduler)) as client:
            yield client
        return
    workers = int(n_workers or os.cpu_count() or 1)
    resources = embedded_resources()
    logger.info(
        "starting an embedded Dask cluster of %d worker processes (resources: %s)",
        workers,
        resources or "none",
    )
    dask = require("dask", extra="fleet", purpose="Running a fleet batch on Dask")
    # Every node of a Dask cluster runs an HTTP server (distributed cannot turn
    # it off): without the dashboard it answers /health only.
    # (the routes are read when the scheduler and the worker processes start)
    with dask.config.set({} if dashboard else _HEALTH_ONLY):
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host=LOOPBACK,
            dashboard_address=f"{LOOPBACK}:0",
            scheduler_kwargs={"dashboard": bool(dashboard)},
            worker_dashboard_address=None,
            env=dict(WORKER_ENV),
            resources=resources or None,
        )
    with cluster, distributed.Client(cluster) as client:
        if dashboard:
            logger.warning(
                "serving the Dask dashboard of the embedded cluster at %s (loopback only)",
                client.dashboard_link,
            )
        yield client
