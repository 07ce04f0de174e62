"""Optimal exciting trajectory for the UR10 identification (waypoint splines + IPOPT).

``OptimalTrajectoryIPOPT`` is the UR10 subclass of
:class:`figaroh.optimal.BaseOptimalTrajectory`: random waypoints (joined by
rest-to-rest quintic pieces, as figaroh 1.0.2 builds them) are optimised by
IPOPT to minimise the condition number of the base regressor (or, with
``--objective d_optimality``, −log det of the regularised information matrix)
under the UR10's joint position / velocity / effort
limits and self-collision avoidance (non-adjacent links; UR10 from
example-robot-data, loaded with its collision meshes).

:func:`identification_quality` simulates joint torques along a trajectory
(URDF inertias + the viscous/Coulomb friction of ``simulate.py`` + Gaussian
noise) and identifies the base parameters by least squares on the fixed
base-column set, returning the relative standard deviations [%] — the figure
an exciting trajectory should make small.

Run ``python examples/ur10/optimal_trajectory.py [--waypoints N] [--seed S]``:
it prints the condition numbers and the identification figures of the initial
random guess and of the optimised trajectory, and saves the results under
``--out`` (``--plot`` shows the joint trajectories).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any, Dict

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulate import UR10_FS, UR10_FV, UR10_JOINTS, ur10_urdf  # noqa: E402

from figaroh.optimal import BaseOptimalTrajectory  # noqa: E402
from figaroh.tools.randomdata import get_torque_rand  # noqa: E402
from figaroh.tools.regressor import build_regressor_basic  # noqa: E402
from figaroh.tools.robot import Robot  # noqa: E402

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "ur10_unified_config.yaml"

#: Base parameters smaller than this fraction of the largest are zero in the URDF
#: (products of inertia, off-axis first moments: exact zeros up to round-off).
ZERO_PARAMETER_TOL = 1e-9

#: Settings of the example (override the configuration's optimal_trajectory task):
#: nine waypoints one second apart (an 8 s segment) sampled at 50 Hz for the
#: optimisation, eight clearance checks per interval, and two IPOPT runs of 300
#: iterations: Schatten-16 then Schatten-64 smoothing of the condition number
#: (a continuation towards cond₂; ≈ 65 s on two cores), weighted by
#: ``exp(0.85·D)`` (``information_weight``): the plain condition number lowers
#: σ_max by slowing the wrists and loses precision on the small wrist inertias.
#:
#: IPOPT does not meet its tolerance on this objective (the iterates wander
#: between local optima), so a short run stops at a point that depends on
#: round-off (with 150 iterations per run and rest-to-rest cubic pieces, seed 0
#: divided cond by 2.98 with OpenBLAS's AVX-512 kernels and by 3.55 with its
#: AVX2 kernels); 300 iterations per run make the result stable.
#:
#: With figaroh 1.0.2's pieces (rest-to-rest quintics), seed 0, AVX2 kernels:
#: cond 99.1 → 44.0 (÷ 2.25; random guesses are better conditioned with these
#: pieces than with cubic ones, 148.2 before, and the optimum is the same,
#: 44.2 before), median relative std-dev of the base parameters 1.92 → 1.59 %
#: (1.61 % with one OpenBLAS thread). Plain cond (w = 0): ÷ 2.68 but the median
#: rises to 2.18 %. The D-optimal objective: median 1.56 %, cond × 1.54.
UR10_TRAJECTORY_SETTINGS: Dict[str, Any] = {
    "n_wps": 9,
    "t_s": 1.0,
    "freq": 50,
    "collision_checks_per_interval": 8,
    "cond_smoothing": [16, 64],
    "information_weight": 0.85,
    "max_iterations": 300,
    "ipopt_print_level": 0,
    # The initial guess's waypoint steps sized for the quintic pieces the
    # segments are (peak 15/8·Δq/t_s), not 1.0.2's cubic peak 1.5·Δq/t_s.
    "step_limit_peak": "quintic",
}


class OptimalTrajectoryIPOPT(BaseOptimalTrajectory):
    """UR10 optimal exciting trajectory.

    The base class already does everything (its IPOPT problem is named after
    the model); a robot subclass only overrides what differs, e.g.
    ``create_ipopt_problem`` to return a customised problem.
    """


def load_ur10_with_geometry(urdf: str | None = None) -> Robot:
    """The UR10 with its collision meshes (needed for self-collision avoidance)."""
    return Robot(urdf or ur10_urdf())


def build(
    robot: Robot | None = None,
    config=CONFIG,
    *,
    seed: int | None = 0,
    progress: bool = False,
    **overrides: Any,
) -> OptimalTrajectoryIPOPT:
    """Construct and initialise the UR10 optimiser.

    Args:
        robot: UR10 with geometry (default: :func:`load_ur10_with_geometry`).
        config: Unified configuration with an ``optimal_trajectory`` task.
        seed: Seed of the random waypoints (None: NumPy's global state).
        progress: tqdm progress bar per segment.
        **overrides: ``trajectory_config`` entries replacing
            :data:`UR10_TRAJECTORY_SETTINGS` / the configuration.
    """
    robot = robot or load_ur10_with_geometry()
    opt = OptimalTrajectoryIPOPT(robot, list(UR10_JOINTS), str(config), rng=seed, progress=progress)
    opt.trajectory_config.update(UR10_TRAJECTORY_SETTINGS)
    opt.trajectory_config.update(overrides)
    opt.initialize()
    return opt


def initial_trajectory(opt: BaseOptimalTrajectory, segment: int = 0):
    """``(t, q, v, a)`` of a solved segment's initial random guess (full-size arrays)."""
    tc = opt.trajectory_config
    tps = tc["t_s"] * (np.arange(tc["n_wps"]) + segment)
    wps = opt.results["initial_waypoints"][segment]
    rest = np.zeros_like(wps)  # the design's spline: zero waypoint velocities/accelerations
    return opt.CB.get_full_config(tc["freq"], tps, wps, rest, rest)


def identification_quality(
    robot: Robot,
    opt: BaseOptimalTrajectory,
    q: np.ndarray,
    v: np.ndarray,
    a: np.ndarray,
    noise_std: float = 0.5,
    seed: int = 0,
) -> Dict[str, Any]:
    """Identify the base parameters from torques simulated along (q, v, a).

    Torques: URDF rigid-body dynamics + viscous/Coulomb friction
    (``UR10_FV`` [N·m·s/rad], ``UR10_FS`` [N·m]) + Gaussian noise of
    ``noise_std`` [N·m]. The base parameters (the optimiser's fixed column
    set ``opt.base_columns``) are estimated by least squares,
    ``φ = W_b⁺ τ``, with covariance ``σ̂² (W_bᵀW_b)⁻¹``,
    ``σ̂² = ‖τ − W_b φ‖² / (rows − n_b)``.

    Relative std-devs are ``100·σ_k/|φ_k|`` with ``φ_k`` the simulated (true)
    base parameter, over the base parameters whose true value is not zero: a
    parameter that is zero in the URDF has no relative precision (dividing by
    its noisy estimate gives a ratio whose distribution does not depend on the
    trajectory). ``median_std_relative_all`` is the median over every base
    parameter of ``100·σ_k/|φ̂_k|`` (estimate in the denominator), for reference.

    Returns:
        ``{"phi", "phi_true" (from noise-free torques), "std" [parameter units],
        "std_relative" [%] (NaN for zero-valued parameters), "nonzero" (mask),
        "median_std_relative" [%], "median_std_relative_all" [%],
        "condition_number", "sigma" [N·m]}``.
    """
    N = len(q)
    cfg = {"has_friction": True, "fv": list(UR10_FV), "fs": list(UR10_FS)}
    rng = np.random.default_rng(seed)
    tau = get_torque_rand(N, robot, q, v, a, cfg, noise_std=noise_std, rng=rng)
    tau_clean = get_torque_rand(N, robot, q, v, a, cfg, noise_std=0.0)
    W = build_regressor_basic(robot, q, v, a, {**opt.identif_config, "has_friction": True})
    W_b = W[:, opt.base_columns]
    phi, *_ = np.linalg.lstsq(W_b, tau, rcond=None)
    phi_true, *_ = np.linalg.lstsq(W_b, tau_clean, rcond=None)
    dof = W_b.shape[0] - W_b.shape[1]
    sigma2 = float(np.sum((tau - W_b @ phi) ** 2) / dof)
    R = np.linalg.qr(W_b, mode="r")
    R_inv = np.linalg.inv(R)
    std = np.sqrt(sigma2 * np.sum(R_inv**2, axis=1))
    nonzero = np.abs(phi_true) > ZERO_PARAMETER_TOL * np.abs(phi_true).max()
    std_rel = np.full(std.shape, np.nan)
    std_rel[nonzero] = 100.0 * std[nonzero] / np.abs(phi_true[nonzero])
    return {
        "phi": phi,
        "phi_true": phi_true,
        "std": std,
        "std_relative": std_rel,
        "nonzero": nonzero,
        "median_std_relative": float(np.median(std_rel[nonzero])),
        "median_std_relative_all": float(np.median(100.0 * std / np.abs(phi))),
        "condition_number": float(np.linalg.cond(W_b)),
        "sigma": float(np.sqrt(sigma2)),
    }


def run(
    seed: int = 0,
    stack_reps: int = 1,
    progress: bool = False,
    **overrides: Any,
) -> OptimalTrajectoryIPOPT:
    """Build, initialise and solve; returns the solved optimiser."""
    opt = build(seed=seed, progress=progress, **overrides)
    opt.solve(stack_reps=stack_reps)
    return opt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urdf", default=None, help="UR10 URDF (default: example-robot-data)")
    parser.add_argument("--waypoints", type=int, default=UR10_TRAJECTORY_SETTINGS["n_wps"])
    parser.add_argument("--segment-duration", type=float, default=UR10_TRAJECTORY_SETTINGS["t_s"])
    parser.add_argument("--segments", type=int, default=1, help="stacked segments")
    parser.add_argument(
        "--objective", choices=("condition_number", "d_optimality"), default="condition_number"
    )
    parser.add_argument(
        "--max-iterations",
        type=int,
        default=UR10_TRAJECTORY_SETTINGS["max_iterations"],
        help="per IPOPT run",
    )
    parser.add_argument(
        "--information-weight",
        type=float,
        default=UR10_TRAJECTORY_SETTINGS["information_weight"],
        help="w in cond·exp(w·D) for the condition-number objective (0: plain cond)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/ur10_optimal_trajectory")
    parser.add_argument("--plot", action="store_true", help="show the joint trajectories")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("cyipopt").setLevel(logging.WARNING)

    start = time.perf_counter()
    robot = load_ur10_with_geometry(args.urdf)
    opt = build(
        robot,
        seed=args.seed,
        progress=True,
        n_wps=args.waypoints,
        t_s=args.segment_duration,
        objective=args.objective,
        max_iterations=args.max_iterations,
        information_weight=args.information_weight,
    )
    opt.solve(stack_reps=args.segments)
    if not opt.results["P_F"]:
        print("No segment could be optimised (see the log above).")
        return 1
    print(
        f"\nOptimised {len(opt.results['P_F'])} segment(s) in {time.perf_counter() - start:.1f} s"
    )
    _, q0, v0, a0 = initial_trajectory(opt)
    q1, v1, a1 = opt.results["P_F"][0], opt.results["V_F"][0], opt.results["A_F"][0]
    before = identification_quality(robot, opt, q0, v0, a0, seed=args.seed)
    after = identification_quality(robot, opt, q1, v1, a1, seed=args.seed)
    print(f"{'':28s}{'initial guess':>16s}{'optimised':>14s}")
    print(
        f"{'condition number':28s}{before['condition_number']:16.1f}"
        f"{after['condition_number']:14.1f}"
    )
    n_nonzero = int(before["nonzero"].sum())
    print(
        f"{'median relative std [%]':28s}{before['median_std_relative']:16.3f}"
        f"{after['median_std_relative']:14.3f}   ({n_nonzero} non-zero base parameters)"
    )
    print(
        f"{'  same, /|estimate|, all':28s}{before['median_std_relative_all']:16.3f}"
        f"{after['median_std_relative_all']:14.3f}   ({len(before['std'])} base parameters)"
    )
    saved = opt.save_results(args.out)
    for fmt, path in (saved or {}).items():
        print(f"saved {fmt}: {path}")
    if args.plot:
        import matplotlib.pyplot as plt

        opt.plot_results()
        plt.show()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
