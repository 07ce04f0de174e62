"""Time the QR base-parameter decomposition of a UR10 regressor against its floor.

The floor is one tall-skinny QR of the reduced regressor ``[W_e | tau]``
(``R`` only, as :func:`figaroh.tools.qrdecomposition.tall_qr_r` computes it
with ``scipy.linalg.lapack.dgeqrt``): the one-pass route
(:meth:`QRDecomposer.decompose`) should cost that plus ``O(n^3)`` work on
the small factor.  For comparison the legacy tuple method
:meth:`QRDecomposer.double_decomposition` redoes the second QR on the tall
matrix (figaroh 1.0.2's arithmetic, ``Q`` formed).  Prints medians and the
ratio to the floor; no assertions.

Usage: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_qr.py [--samples 1000 10000]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pinocchio as pin

from figaroh.tools.qrdecomposition import QRDecomposer, tall_qr_r
from figaroh.tools.robot_paths import example_robot_data_dir

REPEATS = 7


def ur10_regressor(n_samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Joint-major UR10 regressor (row j*N + i = DOF j, sample i) and its parameters."""
    base = example_robot_data_dir()
    if base is None:
        raise SystemExit("example-robot-data is not installed")
    model = pin.buildModelFromUrdf(str(base / "ur_description/urdf/ur10_robot.urdf"))
    data = model.createData()
    pin.seed(seed)
    rng = np.random.default_rng(seed)
    blocks = np.empty((n_samples, model.nv, 10 * (model.njoints - 1)))
    for i in range(n_samples):
        q = pin.randomConfiguration(model)
        v = rng.uniform(-2.0, 2.0, model.nv)
        a = rng.uniform(-3.0, 3.0, model.nv)
        blocks[i] = pin.computeJointTorqueRegressor(model, data, q, v, a)
    W = blocks.transpose(1, 0, 2).reshape(model.nv * n_samples, -1)
    theta = np.concatenate(
        [model.inertias[k].toDynamicParameters() for k in range(1, model.njoints)]
    )
    return W, theta


def _median_ms(func) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def _bench(n_samples: int) -> None:
    W, theta = ur10_regressor(n_samples)
    tau = W @ theta
    keep = np.sum(W**2, axis=0) >= 1e-6
    W_e = np.ascontiguousarray(W[:, keep])
    names = [f"p{j:02d}" for j in np.flatnonzero(keep)]
    floor = _median_ms(lambda: tall_qr_r(np.column_stack([W_e, tau])))
    print(f"  reduced {W_e.shape[0]}x{W_e.shape[1]}: tall QR floor {floor:7.2f} ms")
    runs = {
        "decompose double": lambda: QRDecomposer().decompose(W_e, names, tau=tau),
        "decompose pivoting": lambda: QRDecomposer().decompose(
            W_e, names, tau=tau, method="pivoting"
        ),
        "double_decomposition (1.0.2 tall)": lambda: QRDecomposer().double_decomposition(
            tau, W_e, names
        ),
    }
    for label, func in runs.items():
        t = _median_ms(func)
        print(f"    {label:34s} median {t:7.2f} ms  = {t / floor:5.2f} x floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, nargs="+", default=[1000, 10_000])
    args = parser.parse_args()
    print(f"UR10 QR decomposition benchmark (median of {REPEATS} runs)")
    for n in args.samples:
        _bench(n)


if __name__ == "__main__":
    main()
