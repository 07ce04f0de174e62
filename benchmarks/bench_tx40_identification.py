"""TX40 identification time (real logs, decimation on) versus its irreducible cost.

The Stäubli TX40 example on the controller logs of ``../shared/data/staubli_tx40``
(45 000 samples at 5 kHz, six joints, friction, actuator inertia and the
coupled-wrist columns), run as ``examples/staubli_tx40/identification.py`` runs
it: ``initialize()`` + ``solve(decimate=True, decimation_factor=10, wls=True)``
(the example's ``solve`` adds its essential parameters), in this process, after
a first warm-up run, with the two logs already in memory (the subclass's
``load_trajectory_data`` returns copies of arrays read beforehand; the same
reading the CSV logs is printed for reference).

The floor it is compared with is the sum of

* the bare regressor loop: ``pin.computeJointTorqueRegressor`` once per
  sample, in a Python loop;
* ``scipy.signal.decimate(X, 10, zero_phase=True, axis=-1)`` of the regressor
  columns the identification keeps (every active joint block, the columns
  left after the zero-column elimination, as one C-contiguous
  ``(n_active·p, N)`` array: the time axis last, scipy's own layout) and of the
  six torque signals.

Prints the median and the best of ``--repeats`` runs, in wall-clock time, in
CPU time (user + system of this process: the steadier figure on a shared
machine) and in user time alone (the system time is mostly the kernel's
first touch of fresh pages, which varies several-fold from run to run on a
loaded VM), and the ratio of the medians (goal: at most 2). No assertion:
this is a report. Skips with a message when the data folder is absent.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_tx40_identification.py \
        [--data DIR] [--repeats 7]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "staubli_tx40"
sys.path.insert(0, str(EXAMPLE))

from staubli_tx40_tools import CONFIG, DEFAULT_DATA_DIR, TX40Identification, load_tx40  # noqa: E402


class _Clock:
    """Wall-clock, CPU (user + system) and user time of this process during a block."""

    def __enter__(self) -> _Clock:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.wall, self.user, self.system = time.perf_counter(), usage.ru_utime, usage.ru_stime
        return self

    def __exit__(self, *exc) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.wall = time.perf_counter() - self.wall
        self.user = usage.ru_utime - self.user
        self.system = usage.ru_stime - self.system
        self.cpu = self.user + self.system


SOLVE = {"decimate": True, "decimation_factor": 10, "plotting": False, "wls": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(DEFAULT_DATA_DIR), help="TX40 data folder")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    data_dir = Path(args.data)
    if not (data_dir / "pos_read_data.csv").is_file():
        print(f"skipped: the TX40 logs are not in {data_dir} (pass --data DIR)")
        return
    from scipy import signal

    robot = load_tx40(data_dir)
    log = TX40Identification(robot, CONFIG, data_dir=data_dir).load_trajectory_data()

    class InMemory(TX40Identification):
        """The example's identification with its log already read."""

        def load_trajectory_data(self, data_source=None):
            return {k: None if v is None else v.copy() for k, v in log.items()}

    def identification(cls=InMemory) -> tuple[_Clock, TX40Identification]:
        ident = cls(robot, CONFIG, data_dir=data_dir)  # config parsing: not timed
        with contextlib.redirect_stdout(io.StringIO()), _Clock() as clock:
            ident.initialize()
            ident.solve(**SOLVE, verbose=False)
        return clock, ident

    _, probe = identification()  # warm-up: imports, caches
    q, v, a = (probe.processed_data[k] for k in ("positions", "velocities", "accelerations"))
    n = q.shape[0]
    blocks = probe.regressor_reduced.reshape(robot.model.nv, n, -1)
    kept = np.ascontiguousarray(
        blocks[list(probe.identif_config["act_idxv"])].transpose(0, 2, 1)
    ).reshape(-1, n)
    torques = np.ascontiguousarray(probe.processed_data["torques"].T)
    model, data = robot.model, robot.data

    def bare() -> _Clock:
        with _Clock() as clock:
            for i in range(n):
                pin.computeJointTorqueRegressor(model, data, q[i], v[i], a[i])
        return clock

    def decimate() -> _Clock:
        with _Clock() as clock:
            signal.decimate(kept, SOLVE["decimation_factor"], zero_phase=True, axis=-1)
            signal.decimate(torques, SOLVE["decimation_factor"], zero_phase=True, axis=-1)
        return clock

    runs: dict[str, list[_Clock]] = {"bare": [], "decimate": [], "memory": [], "csv": []}
    for _ in range(args.repeats):
        runs["bare"].append(bare())
        runs["decimate"].append(decimate())
        runs["memory"].append(identification()[0])
        runs["csv"].append(identification(TX40Identification)[0])

    print(
        f"TX40 identification, {n} samples, regressor {probe.dynamic_regressor.shape[0]}x"
        f"{probe.dynamic_regressor.shape[1]}, kept columns {kept.shape[0]}x{n} "
        f"({args.repeats} runs after a warm-up)"
    )
    labels = {
        "bare": f"bare regressor loop ({n} calls):",
        "decimate": "scipy.signal.decimate of the kept columns:",
        "floor": "floor (sum of the two):",
        "memory": "initialize() + solve(), log in memory:",
        "csv": "the same reading the CSV logs:",
    }
    for kind in ("wall", "cpu", "user"):
        med = {k: statistics.median(getattr(c, kind) for c in v) for k, v in runs.items()}
        best = {k: min(getattr(c, kind) for c in v) for k, v in runs.items()}
        pairs = zip(runs["bare"], runs["decimate"], strict=True)
        floor = [getattr(b, kind) + getattr(d, kind) for b, d in pairs]
        med["floor"], best["floor"] = statistics.median(floor), min(floor)
        print(f"{kind + ' time':44s} {'median':>11s} {'best':>11s} {'ratio':>8s}")
        for key, label in labels.items():
            ratio = f"{med[key] / med['floor']:8.2f}" if key in ("memory", "csv") else ""
            goal = "  (goal <= 2)" if key == "memory" else ""
            print(f"{label:44s} {med[key] * 1e3:8.1f} ms {best[key] * 1e3:8.1f} ms {ratio}{goal}")


if __name__ == "__main__":
    main()
