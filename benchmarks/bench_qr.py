"""Time the QR base-parameter decomposition on a 6000 x 60 UR10 regressor.

Usage: ``python benchmarks/bench_qr.py`` (prints timings, no assertions).
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

from figaroh.tools.qrdecomposition import QRDecomposer
from figaroh.tools.robot_paths import example_robot_data_dir

N_SAMPLES = 1000  # 6 DOF x 1000 samples = 6000 rows
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


def main() -> None:
    W, theta = ur10_regressor(N_SAMPLES)
    tau = W @ theta
    names = [f"p{j}" for j in range(W.shape[1])]
    keep = np.sum(W**2, axis=0) >= 1e-6
    cases = {
        f"full {W.shape[0]}x{W.shape[1]}": (W, names),
        f"reduced {W.shape[0]}x{int(keep.sum())}": (
            W[:, keep],
            [n for n, k in zip(names, keep, strict=True) if k],
        ),
    }
    print(f"UR10 QR decomposition benchmark (median of {REPEATS} runs)")
    for label, (W_e, params_r) in cases.items():
        for method in ("double", "pivoting"):
            times = []
            for _ in range(REPEATS):
                start = time.perf_counter()
                res = QRDecomposer().decompose(W_e, params_r, tau=tau, method=method)
                times.append(time.perf_counter() - start)
            print(
                f"  {label:>18s}  {method:8s}  rank={res.rank:3d}  "
                f"median={1e3 * np.median(times):7.2f} ms  min={1e3 * min(times):7.2f} ms"
            )


if __name__ == "__main__":
    main()
