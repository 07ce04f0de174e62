"""Start-up cost of figaroh: whole-process import time against ``numpy`` + ``pinocchio``.

Each statement runs in a fresh ``python -c`` process (the interpreter of this
script), ``--runs`` times; the median wall-clock time is reported, with its
difference to the baseline ``import numpy, pinocchio`` and the ratio. Every
figaroh process needs numpy and pinocchio anyway, so the difference is what
figaroh itself adds to a script's start-up.

Goal: ``figaroh.identification.base_identification`` and
``figaroh.calibration.base_calibration`` each at most **+0.15 s** over the
baseline. Heavy or optional packages (scipy.optimize, scipy.signal, matplotlib,
picos, cvxopt, viser, ...) are imported inside the functions that use them, so
they are paid by the call that needs them, not by the import.

    .venv/bin/python benchmarks/bench_startup.py [--runs 9] [--no-bytecode] [--src DIR]

``--src DIR`` times the figaroh package found in ``DIR`` instead of the
installed one (``git archive <commit> src | tar -x -C /tmp/old`` then
``--src /tmp/old/src`` compares with an older commit).

Like an installed package, figaroh's modules are timed from compiled bytecode:
the processes run without ``PYTHONDONTWRITEBYTECODE`` and with
``PYTHONPYCACHEPREFIX`` pointing to a temporary directory (so the source tree
gets no ``__pycache__``), after one warm-up process per statement. With
``--no-bytecode`` every process compiles figaroh's sources again (the cost seen
by a checkout run with ``PYTHONDONTWRITEBYTECODE=1``).

The timings include interpreter start-up and vary run to run on a loaded
machine; compare medians from the same session.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Mapping, Tuple

BASELINE = "import numpy, pinocchio"

STATEMENTS = (
    BASELINE,
    "import figaroh",
    "import figaroh.identification.base_identification",
    "import figaroh.calibration.base_calibration",
    "import figaroh.visualisation",
)

#: Statements with a goal, and the goal [s] over the baseline.
GOALS = {
    "import figaroh.identification.base_identification": 0.15,
    "import figaroh.calibration.base_calibration": 0.15,
}


def process_time(statement: str, env: Mapping[str, str]) -> Tuple[float, float]:
    """Wall-clock and CPU (user + system) time [s] of one ``python -c statement`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True, env=dict(env))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def median_times(runs: int, env: Mapping[str, str]) -> Dict[str, Tuple[float, float]]:
    """Median wall-clock and CPU times [s] over ``runs`` processes of each of :data:`STATEMENTS`.

    The statements are interleaved, so that a burst of load on the machine
    affects all of them alike; one warm-up process per statement comes first.
    """
    for statement in STATEMENTS:
        process_time(statement, env)
    samples: Dict[str, List[Tuple[float, float]]] = {s: [] for s in STATEMENTS}
    for _ in range(runs):
        for statement in STATEMENTS:
            samples[statement].append(process_time(statement, env))
    return {
        s: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for s, v in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9, help="processes per statement (median)")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="compile figaroh's sources in every process"
    )
    parser.add_argument(
        "--src",
        help="time the figaroh package in this folder (PYTHONPATH), e.g. an exported commit",
    )
    args = parser.parse_args()
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.src, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="figaroh-bench-pycache-") as cache:
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = cache
        times = median_times(args.runs, env)
    mode = "sources compiled each run" if args.no_bytecode else "from bytecode"
    where = f", figaroh from {args.src}" if args.src else ""
    print(f"median of {args.runs} processes each, {mode}{where} ({sys.executable})")
    print(report(times))


def report(times: Mapping[str, Tuple[float, float]]) -> str:
    """Table of wall-clock and CPU times, their difference to the baseline, ratio and goal."""
    base_wall, base_cpu = times[BASELINE]
    lines = [
        f"{'statement':<52} {'wall [s]':>8} {'Δ base':>7} {'ratio':>5}"
        f" {'CPU [s]':>8} {'Δ base':>7}  goal (wall Δ)"
    ]
    for statement, (wall, cpu) in times.items():
        goal = GOALS.get(statement)
        verdict = ""
        if goal is not None:
            verdict = f"≤ +{goal:.2f} s {'met' if wall - base_wall <= goal else 'NOT met'}"
        lines.append(
            f"{statement:<52} {wall:8.3f} {wall - base_wall:+7.3f} {wall / base_wall:5.2f}"
            f" {cpu:8.3f} {cpu - base_cpu:+7.3f}  {verdict}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
