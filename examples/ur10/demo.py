"""figaroh demo: base inertial parameters of a UR10 from simulated data.

1. load the UR10 of the ``example-robot-data`` wheel;
2. simulate an exciting trajectory and its joint torques (URDF inertias +
   friction + 0.5 N·m noise);
3. build the inverse-dynamics regressor, drop the columns that never affect
   the torques and find the base parameters by QR decomposition;
4. estimate them by least squares and compare with the true values.

Run with ``make demo`` or ``.venv/bin/python examples/ur10/demo.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulate import UR10_FS, UR10_FV, load_ur10, simulate_ur10  # noqa: E402

from figaroh.identification.identification_tools import relative_stdev  # noqa: E402
from figaroh.identification.parameter import get_standard_parameters  # noqa: E402
from figaroh.tools.qrdecomposition import QRDecomposer  # noqa: E402
from figaroh.tools.regressor import build_regressor_basic, get_index_eliminate  # noqa: E402


def main() -> int:
    robot = load_ur10()
    print(f"Loaded {robot!r}")
    traj, tau = simulate_ur10(robot, n_samples=5000, noise_std=0.5, seed=0)
    cfg = {
        "has_friction": True,
        "act_idxv": list(range(6)),
        "fv": list(UR10_FV),
        "fs": list(UR10_FS),
    }
    W = build_regressor_basic(robot, traj.q, traj.dq, traj.ddq, cfg)
    params = get_standard_parameters(robot.model, cfg)
    idx_e, params_r = get_index_eliminate(W, params, 1e-6)
    W_e = np.delete(W, idx_e, axis=1)
    tau_stacked = tau.T.ravel()
    qr = QRDecomposer(tolerance=1e-6).decompose(W_e, params_r, tau_stacked, params, method="double")
    theta_r = np.array([params[name] for name in params_r])
    truth = qr.M @ theta_r
    std = relative_stdev(qr.W_b, qr.phi_b, tau_stacked)
    rmse = np.sqrt(np.mean((qr.W_b @ qr.phi_b - tau_stacked) ** 2))
    print(
        f"{W.shape[0]} rows x {W.shape[1]} standard parameters; {len(idx_e)} have no effect; "
        f"{qr.rank} base parameters (cond(R1) = {qr.cond_R1:.3g})"
    )
    print(f"torque RMSE {rmse:.3f} N·m (simulated noise 0.5 N·m)\n")
    width = max(len(e) for e in qr.base_param_expressions)
    width = min(width, 70)
    print(f"{'base parameter':<{width}}  {'estimate':>10}  {'true':>10}  {'std %':>7}")
    for expr, est, true, s in zip(qr.base_param_expressions, qr.phi_b, truth, std, strict=True):
        label = expr if len(expr) <= width else expr[: width - 1] + "…"
        print(f"{label:<{width}}  {est:10.4f}  {true:10.4f}  {s:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
