"""Fleet batch throughput on Dask: jobs per minute with 1 and 2 workers, overhead per job.

A simulated UR10 fleet (``examples/ur10/fleet.py``: ``--robots`` × ``--sessions``
identification jobs of ``--samples`` samples each, CPU-bound) is

1. computed serially in this process with :func:`figaroh.fleet.worker.run_job`
   (compute only: the serial compute time ``T₁``, seconds per job), with one
   BLAS thread as on the workers;
2. written by the driver's single write
   :func:`figaroh.fleet.run_index.write_fleet_run` (run folder + index row,
   seconds per job);
3. run with :func:`figaroh.fleet.run_batch` on an embedded ``LocalCluster`` of
   1 and then 2 worker processes (one thread each), warmed up beforehand so
   that the cluster start and the workers' imports are timed apart.

Printed: jobs per minute for each, the 2-worker / 1-worker ratio (ideal 2.0 on
2 idle cores), the scheduler overhead per job
``(T_batch(n) − T₁/n) / jobs``, how many workers were busy on average
(Σ job durations / wall time), the round trip of a trivial Dask task, and the
storage per run: bytes of each file of a run folder, of its ``index.sqlite`` share and of
its ``index.jsonl`` line, and the single-writer insert rate of the SQLite
index. These are the inputs of the cost model in ``docs/fleet.md``. No
asserts; on a shared machine, run it alone.

    .venv/bin/python benchmarks/bench_fleet.py [--robots 8] [--sessions 2] [--samples 2000]

``--driver-only [--runs 2000]`` measures the driver alone: one identification
job is computed once, then ``--runs`` copies of its output (each its own job:
another robot id and session, so its own job id) go through the driver's
real path — :func:`figaroh.fleet.runner.run_serial`'s ``_drive`` (archive lock,
sweep, plan with the input hashing, grouped index transactions) and
``_Batch.handle`` (sealed run folder, ``index.jsonl`` line, index row) —
without computing anything. Printed: the time of each ``handle`` call per run
(median, p90, max, mean: the group commits, with their one sync and the seals
of the group's folders, land in some calls), the plan time per job and the
wall time per run of the whole batch.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import logging
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

# one BLAS thread in this process too, as on the workers (figaroh.fleet.cluster.WORKER_ENV)
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ur10"))

import fleet as fleet_example  # noqa: E402

from figaroh.fleet import runner as fleet_runner  # noqa: E402
from figaroh.fleet.cluster import dask_client  # noqa: E402
from figaroh.fleet.jobs import Job, load_batch  # noqa: E402
from figaroh.fleet.run_index import INDEX_DB, RunIndex, index_path, write_fleet_run  # noqa: E402
from figaroh.fleet.runner import run_batch  # noqa: E402
from figaroh.fleet.worker import JobOutput, run_job  # noqa: E402


def _warm_worker() -> int:
    """Import the identification stack on a worker (timed apart from the batch)."""
    import figaroh.cli.csv_identification  # noqa: F401
    import figaroh.fleet.worker  # noqa: F401

    return os.getpid()


def _noop(x: int) -> int:
    return x


def _serial_compute(jobs) -> tuple[list[float], float, list]:
    """Wall seconds of ``run_job`` per job in this process, CPU seconds in all, the outputs."""
    run_job(jobs[0])  # warm-up (imports, URDF parse caches)
    seconds, outputs = [], []
    cpu0 = time.process_time()
    for job in jobs:
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            outputs.append(run_job(job))
        seconds.append(time.perf_counter() - start)
    return seconds, time.process_time() - cpu0, outputs


def _driver_writes(outputs, archive: Path) -> tuple[float, list]:
    """Seconds per job of the driver's write (run folder + index row), and the records."""
    archive.mkdir(parents=True)
    with RunIndex(index_path(archive)) as index:
        start = time.perf_counter()
        records = [write_fleet_run(archive, o.files, o.record, index) for o in outputs]
        return (time.perf_counter() - start) / len(outputs), records


def _busy_seconds(records) -> float:
    """Sum of the jobs' own durations (``finished − started``) on the workers [s]."""
    total = 0.0
    for r in records:
        t0, t1 = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (r.started, r.finished))
        total += (t1 - t0).total_seconds()
    return total


def _on_cluster(jobs, n_workers: int, archive: Path) -> dict:

    start = time.perf_counter()
    with dask_client(None, n_workers) as client:
        client.run(_warm_worker)
        t_start = time.perf_counter() - start
        trivial = client.map(_noop, range(200), pure=False)
        begin = time.perf_counter()
        client.gather(trivial)
        t_trivial = (time.perf_counter() - begin) / 200
        cpu0 = sum(client.run(time.process_time).values())
        begin = time.perf_counter()
        result = run_batch(jobs, client, archive_root=str(archive), progress=False)
        wall = time.perf_counter() - begin
        cpu = sum(client.run(time.process_time).values()) - cpu0
    if result.failures:
        raise RuntimeError(f"{len(result.failures)} jobs failed: {result.failures[0]}")
    busy = _busy_seconds(result.runs)
    return {"start": t_start, "trivial": t_trivial, "wall": wall, "busy": busy, "cpu": cpu}


def _folder_bytes(archive: Path, records) -> dict[str, float]:
    """Mean bytes per run of each file of a run folder (and ``total``)."""
    sizes: dict[str, float] = {}
    for record in records:
        for p in (archive / record.run_dir).iterdir():
            if p.is_file():
                sizes[p.name] = sizes.get(p.name, 0.0) + p.stat().st_size / len(records)
    sizes["total"] = sum(sizes.values())
    return sizes


def _index_bytes(archive: Path, n_runs: int) -> tuple[float, float]:
    sqlite_bytes = sum(p.stat().st_size for p in archive.glob(INDEX_DB + "*") if p.is_file())
    jsonl = archive / "index.jsonl"
    return sqlite_bytes / n_runs, (jsonl.stat().st_size if jsonl.is_file() else 0) / n_runs


def _insert_rate(template, folder: Path, n: int = 2000) -> tuple[float, float]:
    """Runs/s of ``RunIndex.add`` (one transaction each) and index bytes per run at ``n`` runs."""
    db = folder / "insert_rate.sqlite"
    with RunIndex(db) as index:
        start = time.perf_counter()
        for k in range(n):
            rid = f"{k:016x}"
            index.add(dataclasses.replace(template, run_id=rid, job_id=rid))
        rate = n / (time.perf_counter() - start)
    size = sum(p.stat().st_size for p in folder.glob(db.name + "*"))
    return rate, size / n


def _copies(template: JobOutput, n: int) -> list[JobOutput]:
    """``n`` outputs of distinct jobs (robot ``robot_<k % 200>``, session ``<k // 200>``)."""
    outputs = []
    for k in range(n):
        fields = {**template.job.fields(), "robot_id": f"robot_{k % 200:03d}"}
        job = Job(**{**fields, "session": f"s{k // 200:03d}"})
        record = dataclasses.replace(
            template.record,
            run_id=job.job_id,
            job_id=job.job_id,
            robot_id=job.robot_id,
            session=job.session,
        )
        outputs.append(JobOutput(job=job, record=record, files=template.files))
    return outputs


def _percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def driver_only(args) -> None:
    """The driver's own time per run over ``args.runs`` synthetic outputs (see the docstring)."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = fleet_example.write_fleet(tmp / "fleet", 1, 1, n_samples=args.samples)
        with contextlib.redirect_stdout(io.StringIO()):
            template = run_job(load_batch(paths.batch)[0])
        outputs = _copies(template, args.runs)
        jobs = [o.job for o in outputs]
        by_id = {o.job.job_id: o for o in outputs}
        for job in jobs:  # the plan hashes the inputs again, as in a batch
            job.__dict__.pop("_job_id", None)
            job.__dict__.pop("_input_hashes", None)
        per_run: list[float] = []
        marks: dict[str, float] = {}

        def execute(batch, todo) -> None:
            marks["planned"] = time.perf_counter()
            for job in todo:
                start = time.perf_counter()
                batch.handle(job, by_id[job.job_id])
                per_run.append(time.perf_counter() - start)

        begin = time.perf_counter()
        result = fleet_runner._drive(jobs, tmp / "archive", False, execute)
        wall = time.perf_counter() - begin
        sqlite_bytes = sum(p.stat().st_size for p in (tmp / "archive").glob(INDEX_DB + "*"))
    if len(result.runs) != args.runs:
        raise RuntimeError(f"{len(result.runs)} of {args.runs} runs written: {result.failures[:1]}")
    ms = sorted(1e3 * t for t in per_run)
    kib = sum(map(len, template.files.values())) / 1024
    print(
        f"driver only: {args.runs} runs of one UR10 identification ({args.samples} samples, "
        f"{len(template.record.parameters)} parameters, {kib:.1f} KiB of files), "
        f"{os.cpu_count()} cores, load average {load:.1f} at start"
    )
    print(
        f"  per run (handle: folder + line + row)  median {ms[len(ms) // 2]:.2f} ms, "
        f"p90 {_percentile(ms, 0.9):.2f} ms, max {ms[-1]:.1f} ms, mean {sum(ms) / len(ms):.2f} ms"
    )
    plan = marks["planned"] - begin
    print(f"  plan (lock, sweep, hash inputs, look-ups) {1e3 * plan / args.runs:.2f} ms per job")
    print(f"  whole batch                            {1e3 * wall / args.runs:.2f} ms per run")
    print(f"  index.sqlite                           {sqlite_bytes / args.runs / 1024:.2f} KiB/run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--driver-only", action="store_true", help="time the driver alone")
    parser.add_argument("--runs", type=int, default=2000, help="runs of --driver-only")
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    logging.getLogger("figaroh").setLevel(logging.ERROR)
    if args.driver_only:
        driver_only(args)
        return
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = fleet_example.write_fleet(
            tmp / "fleet", args.robots, args.sessions, n_samples=args.samples
        )
        jobs = load_batch(paths.batch)
        n = len(jobs)
        per_job, cpu1, outputs = _serial_compute(jobs)
        t1 = sum(per_job)
        write_s, records = _driver_writes(outputs, tmp / "serial")
        clusters = {w: _on_cluster(jobs, w, tmp / f"w{w}") for w in (1, 2)}
        folder = _folder_bytes(tmp / "serial", records)
        sqlite_per_run, jsonl_per_run = _index_bytes(tmp / "serial", n)
        rate, sqlite_at_scale = _insert_rate(records[0], tmp)
    _print(args, n, (t1, cpu1), write_s, clusters, load)
    print(f"storage per run ({len(records[0].parameters)} parameters, {args.samples} samples):")
    for name, size in sorted(folder.items(), key=lambda kv: -kv[1]):
        print(f"  {'run folder ' + name:36s}{size / 1024:9.1f} KiB")
    print(
        f"  index.sqlite                       {sqlite_per_run / 1024:9.2f} KiB at {n} runs, "
        f"{sqlite_at_scale / 1024:.2f} KiB at 2000 runs"
    )
    print(f"  index.jsonl line                   {jsonl_per_run / 1024:9.2f} KiB")
    print(f"  SQLite single-writer inserts       {rate:9.0f} runs/s (one transaction each)")


def _print(args, n: int, serial: tuple, write_s: float, clusters: dict, load: float) -> None:
    t1, cpu1 = serial
    print(
        f"fleet: {n} UR10 identification jobs x {args.samples} samples, "
        f"{os.cpu_count()} cores, load average {load:.1f} at start"
    )
    print(
        f"  compute per job (run_job, serial)  {t1 / n:9.3f} s   ({60 * n / t1:7.1f} jobs/min; "
        f"CPU {cpu1 / n:.3f} s/job)"
    )
    print(f"  driver write per job               {write_s * 1e3:9.1f} ms  (folder + index row)")
    for w, c in clusters.items():
        overhead = (c["wall"] - t1 / w) / n
        print(
            f"  run_batch, {w} worker(s)            {c['wall'] / n:9.3f} s/job "
            f"({60 * n / c['wall']:7.1f} jobs/min; overhead {overhead * 1e3:+.0f} ms/job; "
            f"busy {c['busy'] / c['wall']:.2f} workers; worker CPU {c['cpu'] / n:.3f} s/job; "
            f"cluster start {c['start']:.1f} s; "
            f"trivial task {c['trivial'] * 1e3:.2f} ms)"
        )
    ratio = clusters[1]["wall"] / clusters[2]["wall"]
    print(f"  2 workers / 1 worker throughput    {ratio:9.2f} x  (ideal 2.00 on 2 idle cores)")


if __name__ == "__main__":
    main()
