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
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timedelta
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


# ---------------------------------------------------------------------------
# Report cost: the drift report over a window of a large index
# ---------------------------------------------------------------------------
#: Per-joint terms (stable quantities) and per-robot inertial base parameters of a simulated run.
_REPORT_JOINTS = ("j1", "j2", "j3", "j4", "j5", "j6")


def _simulated_index(path: Path, robots: int, sessions: int) -> tuple[int, float]:
    """An index of ``robots × sessions`` runs of 48 parameters each, written in one transaction.

    24 per-joint terms (``fv_``, ``fs_``, ``Ia_``, ``off_`` of 6 joints) and 24
    inertial base parameters whose names carry the robot's own trajectory-dependent
    coefficients (each robot its own base-parameter structure). Returns the runs
    written and the seconds it took.
    """
    import numpy as np

    from figaroh.fleet.record import ParameterEstimate, RunRecord

    rng = np.random.default_rng(0)
    start = time.perf_counter()
    with RunIndex(path) as index:
        index.add(  # creates the schema; the rest goes in one transaction below
            RunRecord(
                run_id="seed",
                job_id="seed",
                robot_id="seed",
                task="calibration",
                session="seed",
                session_time="2000-01-01T00:00:00+00:00",
                started="",
                finished="",
                config_sha256="",
                data_sha256={},
                verdict_status="pass",
                passed=True,
                metrics={},
                parameters=(ParameterEstimate("d_px_1", 0.0, None),),
            )
        )
    conn = sqlite3.connect(path)
    stable = [f"{p}_{j}" for p in ("fv", "fs", "Ia", "off") for j in _REPORT_JOINTS]
    runs, params = [], []
    for r in range(robots):
        inertial = [
            f"{key}_{j} - 0.{r:04d}{k}*mz_{j}"
            for k, key in enumerate(("Ixx", "Iyy", "Izz", "mx"))
            for j in _REPORT_JOINTS
        ]
        truth = 1.0 + 0.1 * rng.standard_normal(48)
        for s in range(sessions):
            run = f"r{r:05d}-s{s:04d}"
            when = (datetime(2026, 1, 1) + timedelta(days=s)).isoformat() + "+00:00"
            runs.append(
                (
                    run,
                    run,
                    f"robot_{r:05d}",
                    "identification",
                    f"s{s:04d}",
                    when,
                    when,
                    when,
                    "0" * 64,
                    "{}",
                    "pass",
                    1,
                    f"robot_{r:05d}/identification/{run}",
                    "bench",
                )
            )
            values = truth + 0.01 * rng.standard_normal(48)
            for i, name in enumerate(stable + inertial):
                params.append((run, name, i, float(values[i]), 0.01))
    with conn:
        conn.executemany(f"INSERT INTO runs VALUES ({', '.join('?' * 14)})", runs)
        conn.executemany("INSERT INTO parameters VALUES (?, ?, ?, ?, ?)", params)
    conn.close()
    return len(runs), time.perf_counter() - start


def _report_cost(db: Path, html: Path, **window) -> dict[str, float]:
    """Seconds, peak traced memory and HTML bytes of one drift report over ``window``.

    Timed once as is, then run again under :mod:`tracemalloc` for the peak
    memory (tracing slows the allocations down, so that run is not timed).
    """
    import resource
    import tracemalloc

    from figaroh.fleet.drift import drift_report
    from figaroh.fleet.drift_html import write_drift_html

    def report_and_page():
        begin = time.perf_counter()
        with RunIndex(db) as index:
            report = drift_report(index, task="identification", **window)
        analysed = time.perf_counter()
        write_drift_html(report, html)
        return report, analysed - begin, time.perf_counter() - analysed

    report, seconds, page_seconds = report_and_page()
    tracemalloc.start()
    report_and_page()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    points = sum(len(v) for p in report.parameters for v in p.robots.values())
    return {
        "report": seconds,
        "html": page_seconds,
        "peak_mib": peak / 2**20,
        "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "html_kib": html.stat().st_size / 1024,
        "points": points,
        "quantities": len(report.parameters),
        "flagged": len(report.flagged_robots),
    }


def _warm_up_report() -> None:
    """Import and run the analysis and the page once (SciPy, templates) before timing."""
    from figaroh.fleet.drift import analyse_drift
    from figaroh.fleet.drift_html import drift_html
    from figaroh.fleet.run_index import HistoryPoint

    points = [
        HistoryPoint(f"r{r}", f"r{r}-s{s}", f"s{s}", f"2026-01-0{s + 1}", "fs_j1", 1.0 + r, 0.1)
        for r in range(4)
        for s in range(3)
    ]
    drift_html(analyse_drift(points))


def bench_report_window(robots: int = 100, sessions: int = 100, last: int = 30) -> dict:
    """Drift report cost over an index of ``robots × sessions`` runs, windowed and whole.

    Builds the simulated index (:func:`_simulated_index`: 10 000 runs of 48
    parameters by default), then times ``drift_report(index, last=last)`` and
    its HTML page, and the same over the whole history: seconds of the query
    and analysis, seconds of the page, peak memory traced by :mod:`tracemalloc`
    (Python and NumPy allocations) and the process's maximum resident set, the
    page's size. Prints one line per report and returns the figures.

        .venv/bin/python -c "import sys; sys.path.insert(0, 'benchmarks'); \\
            import bench_fleet; bench_fleet.bench_report_window()"
    """
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / INDEX_DB
        n_runs, build = _simulated_index(db, robots, sessions)
        size = sum(p.stat().st_size for p in Path(tmp).glob(INDEX_DB + "*"))
        print(
            f"report cost: index of {n_runs} runs ({robots} robots x {sessions} sessions, "
            f"48 parameters) {size / 2**20:.0f} MiB, built in {build:.1f} s"
        )
        _warm_up_report()
        out = {}
        for label, window in ((f"last {last} sessions", {"last": last}), ("whole history", {})):
            cost = _report_cost(db, Path(tmp) / "drift.html", **window)
            out[label] = cost
            print(
                f"  {label:20s} {cost['points']:8d} points, {cost['quantities']} quantities: "
                f"report {cost['report']:.2f} s, page {cost['html']:.2f} s, "
                f"peak traced {cost['peak_mib']:.0f} MiB (max RSS {cost['maxrss_mib']:.0f} MiB), "
                f"page {cost['html_kib']:.0f} KiB, {cost['flagged']} robots flagged"
            )
    return out


if __name__ == "__main__":
    main()
