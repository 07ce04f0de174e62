"""End-to-end identification time versus the irreducible regressor cost.

UR10, 10 000 training samples and a 10 000-sample held-out trajectory, two
measurements against the same floor, a bare Python loop calling
``pin.computeJointTorqueRegressor`` once per training and validation sample in
this process:

* **in process**: ``initialize()`` + ``solve(decimate=False, plotting=False)``
  with the two logs already in memory (the subclass's ``load_trajectory_data``
  returns copies of arrays read beforehand), i.e. figaroh's own work on the
  data: conditioning, both regressors, QR, fit, validation (goal: at most 3×
  the bare loop); and the same reading the CSV logs with the example's loader
  (``np.loadtxt``, printed for reference: the file parsing is the user's I/O);
* **whole script**: a fresh ``python`` subprocess that imports figaroh, loads
  the UR10 (``Robot``, no geometry), reads the two trajectory CSVs and runs the
  identification, wall time of the whole process including interpreter start
  and imports, and the same minus a ``python -c "import numpy, pinocchio"``
  process (what any script pays before figaroh; goal: at most 6× the bare
  loop). The CSVs are written once beforehand (simulating them is not part of
  an identification script). Subprocesses run from compiled bytecode kept in a
  temporary ``PYTHONPYCACHEPREFIX``, as an installed package does.

Prints the median and the best of ``--repeats`` runs of each and the ratios of
the medians, in wall-clock time and in CPU time (user + system of this process,
or of the child for the whole script): on a shared machine the CPU times are
the steadier figures, the wall times are what a user waits for on a quiet one.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_identification.py \
        [--samples 10000] [--repeats 11]

Reading the two CSV logs (3.2 MB each) with the example's loader costs about
0.1 s at 10 000 + 10 000 samples (``np.loadtxt``, numpy's fastest text reader
on this data; ``np.fromstring`` and a split-based parser measured slower, and
it holds the GIL, so two files read in threads take as long); the whole-script
figure includes it. The identification imports ``scipy.signal`` (its
low-pass filter is ``scipy.signal``'s ``medfilt`` and ``filtfilt``) and
``scipy.linalg`` (its QR and triangular solves) when it first calls them.

The ratios depend on BLAS threading: with OpenBLAS's default two threads the
single-threaded parts after a matrix call (e.g. the validation regressor
loop) ran up to 2× slower on a 2-vCPU VM than with ``OPENBLAS_NUM_THREADS=1``;
run it on a quiet machine, other processes on the same cores inflate every
figure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pinocchio as pin

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ur10"
sys.path.insert(0, str(EXAMPLE))

from identification import CONFIG, UR10Identification, generate_ur10_data  # noqa: E402
from simulate import load_ur10  # noqa: E402

#: What every figaroh script pays before figaroh: the interpreter, numpy and Pinocchio.
BASELINE = "import numpy, pinocchio"

#: The user's script timed as a whole: imports, robot load, data load, identification.
SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from identification import CONFIG, UR10Identification
from simulate import load_ur10
robot = load_ur10()
ident = UR10Identification(robot, CONFIG, data_dir=sys.argv[2])
ident.identif_config["validation_data_file"] = sys.argv[3]
ident.initialize()
ident.solve(decimate=False, plotting=False)
"""


class _Clock:
    """Wall-clock and CPU time of a block (CPU: this process, or its children)."""

    def __init__(self, children: bool = False):
        self.who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF

    def _cpu(self) -> float:
        usage = resource.getrusage(self.who)
        return usage.ru_utime + usage.ru_stime

    def __enter__(self) -> _Clock:
        self.wall, self.cpu = time.perf_counter(), self._cpu()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = self._cpu() - self.cpu


def _stats(times: list[float]) -> tuple[float, float]:
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=11)
    args = parser.parse_args()
    robot = load_ur10()
    with tempfile.TemporaryDirectory() as tmp:
        train, validation = generate_ur10_data(
            tmp, n_samples=args.samples, noise_std=0.5, robot=robot
        )
        probe = UR10Identification(robot, CONFIG, data_dir=train)
        probe.identif_config["validation_data_file"] = str(validation)
        probe.initialize()
        Q = [probe.processed_data["positions"], probe._val_processed_data["positions"]]
        V = [probe.processed_data["velocities"], probe._val_processed_data["velocities"]]
        A = [probe.processed_data["accelerations"], probe._val_processed_data["accelerations"]]
        model, data = robot.model, robot.data

        def bare() -> _Clock:
            with _Clock() as clock:
                for q, v, a in zip(Q, V, A, strict=True):
                    for i in range(q.shape[0]):
                        pin.computeJointTorqueRegressor(model, data, q[i], v[i], a[i])
            return clock

        logs = {str(train): probe.load_trajectory_data(train)}
        logs[str(validation)] = probe.load_trajectory_data(validation)

        class InMemory(UR10Identification):
            """The example's identification with its two logs already read."""

            def load_trajectory_data(self, data_source=None):
                source = str(data_source) if data_source else str(self.data_dir)
                return {k: None if v is None else v.copy() for k, v in logs[source].items()}

        def in_process(cls=InMemory) -> _Clock:
            ident = cls(robot, CONFIG, data_dir=train)  # config parsing: not timed
            ident.identif_config["validation_data_file"] = str(validation)
            with contextlib.redirect_stdout(io.StringIO()), _Clock() as clock:
                ident.initialize()
                ident.solve(decimate=False, plotting=False)
            return clock

        # Like an installed package: figaroh runs from compiled bytecode (kept
        # out of the source tree), whatever PYTHONDONTWRITEBYTECODE says here.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")

        def subprocess_clock(*cmd: str) -> _Clock:
            with _Clock(children=True) as clock:
                subprocess.run(
                    [sys.executable, *cmd],
                    check=True,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            return clock

        def whole_script() -> _Clock:
            return subprocess_clock("-c", SCRIPT, str(EXAMPLE), str(train), str(validation))

        def baseline() -> _Clock:
            return subprocess_clock("-c", BASELINE)

        whole_script()  # compiles the bytecode once
        runs: dict[str, list[_Clock]] = {
            "bare": [],
            "in_process": [],
            "in_process_csv": [],
            "script": [],
            "baseline": [],
        }
        for _ in range(args.repeats):
            runs["bare"].append(bare())
            runs["in_process"].append(in_process())
            runs["in_process_csv"].append(in_process(UR10Identification))
            runs["script"].append(whole_script())
            runs["baseline"].append(baseline())
    n = args.samples
    print(f"UR10 identification, {n} training + {n} validation samples ({args.repeats} runs)")
    labels = {
        "bare": f"bare regressor loop ({2 * n} calls):",
        "in_process": "initialize() + solve(), logs in memory:",
        "in_process_csv": "the same reading the two CSV logs:",
        "script": "whole script (subprocess):",
    }
    for kind in ("wall", "cpu"):
        med = {k: _stats([getattr(c, kind) for c in v]) for k, v in runs.items()}
        print(f"{kind + ' time':40s} {'median':>11s} {'best':>11s} {'ratio':>8s}")
        for key, label in labels.items():
            m, best = med[key]
            ratio = "" if key == "bare" else f"{m / med['bare'][0]:8.2f}"
            goal = "  (goal <= 3)" if key == "in_process" else ""
            print(f"{label:40s} {m * 1e3:8.1f} ms {best * 1e3:8.1f} ms {ratio}{goal}")
        base = med["baseline"][0]
        after = med["script"][0] - base
        print(f"{'python -c ' + repr(BASELINE) + ':':40s} {base * 1e3:8.1f} ms")
        print(
            f"{'whole script after that baseline:':40s} {after * 1e3:8.1f} ms"
            f" {'':11s} {after / med['bare'][0]:8.2f}  (goal <= 6)"
        )


if __name__ == "__main__":
    main()
