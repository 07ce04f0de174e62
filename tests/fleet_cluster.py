"""A real Dask cluster for tests: a scheduler and worker subprocesses on 127.0.0.1.

:class:`SubprocessCluster` starts ``python -m distributed.cli.dask_scheduler``
(``--host 127.0.0.1 --port 0 --no-dashboard``, its address in a scheduler
file under the test's tmp folder) and one ``distributed.cli.dask_worker``
process per :class:`WorkerSpec` (one thread, one BLAS thread, its own working
directory, optional ``--resources`` and ``--no-nanny``), waits until every
worker is connected and, on exit, kills each process group it started (the
nanny and its worker process). The workers import the figaroh this test
imports (its ``src`` folder goes first on their ``PYTHONPATH``), whatever
their working directory.

Worker plugins for fault tests are built inside functions so that
cloudpickle ships their classes by value (the workers cannot import this
module):

* :func:`task_log_plugin` — each worker appends the key of every task it
  starts executing to ``<folder>/<worker name>.keys``;
* :func:`kill_plugin` — SIGKILLs the worker process when it starts its
  ``at``-th task, once in the cluster or on every worker.

Skip the tests that use it with
``pytest.importorskip("distributed")``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Sequence

import figaroh
from figaroh.fleet.archive_lock import lock_path

#: The ``src`` folder of the figaroh the tests import (first on the workers' path).
FIGAROH_SRC = Path(figaroh.__file__).resolve().parents[1]
#: One BLAS/OpenMP thread per worker (bit-identical sums, no oversubscription).
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}
START_TIMEOUT_S = 90.0


@dataclasses.dataclass(frozen=True)
class WorkerSpec:
    """One ``dask worker`` process.

    Attributes:
        name: The worker's name (``--name``).
        cwd: Its working directory.
        resources: ``--resources`` text such as ``"ipopt=1"`` (None: none).
        nanny: Run under a nanny (restarted when killed).
        env: Extra environment variables.
    """

    name: str
    cwd: Path
    resources: str | None = None
    nanny: bool = True
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)


def _environment(extra: Mapping[str, str]) -> Dict[str, str]:
    env = dict(os.environ)
    env.update(ONE_THREAD)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(FIGAROH_SRC), path) if p)
    env.update(extra)
    return env


class SubprocessCluster:
    """A scheduler and worker subprocesses on 127.0.0.1 (a context manager).

    Attributes:
        folder: Where the scheduler file and the process logs are written.
        address: The scheduler's address, once started.
    """

    def __init__(self, folder: Path, workers: Sequence[WorkerSpec]) -> None:
        self.folder = Path(folder)
        self.workers = list(workers)
        self.scheduler_file = self.folder / "scheduler.json"
        self.address = ""
        self._procs: List[subprocess.Popen] = []

    def _spawn(self, name: str, args: List[str], cwd: Path, env: Dict[str, str]) -> None:
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [sys.executable, *args],
            cwd=str(cwd),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the nanny and its worker
        )
        log.close()
        self._procs.append(proc)

    def start(self) -> SubprocessCluster:
        """Start the scheduler and the workers; return once every worker is connected."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._spawn(
            "scheduler",
            [
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(self.scheduler_file),
            ],
            self.folder,
            _environment({}),
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.scheduler_file.is_file():
            if time.monotonic() > deadline or self._procs[0].poll() is not None:
                raise RuntimeError(f"the scheduler did not start: {self.log('scheduler')}")
            time.sleep(0.1)
        while not self.address:
            with contextlib.suppress(ValueError):
                self.address = json.loads(self.scheduler_file.read_text())["address"]
            time.sleep(0.05)
        for spec in self.workers:
            spec.cwd.mkdir(parents=True, exist_ok=True)
            args = [
                "-m",
                "distributed.cli.dask_worker",
                self.address,
                "--host",
                "127.0.0.1",
                "--nthreads",
                "1",
                "--nworkers",
                "1",
                "--name",
                spec.name,
                "--no-dashboard",
                "--local-directory",
                str(self.folder / f"{spec.name}-space"),
                "--nanny" if spec.nanny else "--no-nanny",
            ]
            if spec.resources:
                args += ["--resources", spec.resources]
            self._spawn(spec.name, args, spec.cwd, _environment(spec.env))
        with self.client() as client:
            client.wait_for_workers(len(self.workers), timeout=START_TIMEOUT_S)
        return self

    def client(self) -> Any:
        """A new ``distributed.Client`` of the cluster (close it, e.g. ``with``)."""
        from distributed import Client

        return Client(self.address, timeout=30)

    def worker_addresses(self, client: Any) -> Dict[str, str]:
        """Worker name → address, of the workers connected now."""
        workers = client.scheduler_info(n_workers=-1)["workers"]
        return {str(info["name"]): address for address, info in workers.items()}

    def log(self, name: str) -> str:
        """The output of the process ``name`` (``scheduler`` or a worker name)."""
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.is_file() else ""

    def stop(self) -> None:
        """Kill every process group this cluster started, workers first."""
        for proc in reversed(self._procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        self._procs.clear()

    def __enter__(self) -> SubprocessCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def subprocess_cluster(folder: Path, workers: Sequence[WorkerSpec]) -> Iterator[SubprocessCluster]:
    """:class:`SubprocessCluster` as a ``with`` block."""
    with SubprocessCluster(folder, workers) as cluster:
        yield cluster


def start_driver(batch: Path, archive: Path, *extra: str) -> subprocess.Popen:
    """``figaroh fleet run BATCH --archive ARCHIVE --no-progress EXTRA…`` as a subprocess.

    It imports the figaroh the tests import, with one BLAS thread; stdout and
    stderr are one text pipe.
    """
    command = [sys.executable, "-m", "figaroh.cli.main", "fleet", "run", str(batch)]
    return subprocess.Popen(
        [*command, "--archive", str(archive), "--no-progress", *extra],
        env=_environment({}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(condition: Any, seconds: float, what: str) -> None:
    """Poll ``condition()`` every 50 ms; fail the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def lock_holder_pid(archive: Path) -> int:
    """The pid recorded in the archive's lock file (0 when none is readable)."""
    try:
        return int(json.loads(lock_path(archive).read_text() or "{}").get("pid", 0))
    except (OSError, ValueError):
        return 0


def executed_keys(folder: Path) -> Dict[str, List[str]]:
    """Worker name → keys of the tasks it started, as :func:`task_log_plugin` wrote them."""
    out: Dict[str, List[str]] = {}
    for path in sorted(Path(folder).glob("*.keys")):
        out[path.stem] = path.read_text().split()
    return out


def task_log_plugin(folder: str) -> Any:
    """A worker plugin writing each task key a worker starts to ``<folder>/<worker name>.keys``."""
    from distributed import WorkerPlugin

    class TaskLog(WorkerPlugin):
        name = "figaroh-test-task-log"

        def setup(self, worker):
            self.path = os.path.join(folder, f"{worker.name}.keys")

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing":
                with open(self.path, "a", encoding="utf-8") as out:
                    out.write(f"{key}\n")

    return TaskLog()


def kill_plugin(marker: str, at: int = 1, once: bool = True) -> Any:
    """A worker plugin that SIGKILLs its worker process when it starts its ``at``-th task.

    Args:
        marker: A file path: with ``once``, created exclusively by the one
            worker that dies (a restarted or other worker then lives);
            otherwise ``<marker>.<pid>`` per worker that dies.
        at: The task number (1: the first task).
        once: One death in the whole cluster; False: every worker dies.
    """
    from distributed import WorkerPlugin

    class Kill(WorkerPlugin):
        name = "figaroh-test-kill"

        def setup(self, worker):
            self.started = 0

        def transition(self, key, start, finish, **kwargs):
            if finish != "executing":
                return
            self.started += 1
            if self.started != at:
                return
            path = marker if once else f"{marker}.{os.getpid()}"
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.write(fd, json.dumps({"pid": os.getpid(), "key": str(key)}).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)

    return Kill()
