"""Stäubli TX40 dynamic identification on the real controller log.

Usage::

    python examples/staubli_tx40/identification.py [DATA_DIR] [--config FILE]
        [--ols] [--no-decimate] [--decimation-factor 10] [--ratio-essential R]
        [--plot] [--save OUT_DIR]

``DATA_DIR`` holds ``pos_read_data.csv`` (motor positions [rad]),
``curr_data.csv`` (motor currents) and ``tx40_mdh_modified.urdf``; it defaults
to ``<repo>/../shared/data/staubli_tx40``. The script converts the motor log
to joint positions and torques, identifies the base parameters (decimation,
per-joint speed selection, weighted least squares unless ``--ols``), prints
the quality report, the identified friction next to the nominal values of the
config, the essential parameters (Pham & Gautier, ``ratio_essential``) and the
run time of ``initialize() + solve()``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from staubli_tx40_tools import (  # noqa: E402
    CONFIG,
    DEFAULT_DATA_DIR,
    TX40_JOINTS,
    TX40Identification,
    load_tx40,
)


def run(
    data_dir: str | Path = DEFAULT_DATA_DIR,
    config: str | Path = CONFIG,
    wls: bool = True,
    decimate: bool = True,
    decimation_factor: int = 10,
    plotting: bool = False,
    quiet: bool = False,
) -> tuple[TX40Identification, float]:
    """Identify the TX40 and time ``initialize() + solve()``.

    Args:
        data_dir: Folder of the log and the URDF.
        config: Unified configuration file.
        wls: Weighted least squares (one noise variance per joint).
        decimate: Low-pass and down-sample the rows by ``decimation_factor``.
        decimation_factor: Down-sampling factor.
        plotting: Plot measured vs identified torques.
        quiet: Do not print the quality report.

    Returns:
        ``(identification, seconds)``.
    """
    robot = load_tx40(data_dir)
    ident = TX40Identification(robot, config, data_dir=data_dir)
    start = time.perf_counter()
    ident.initialize()
    ident.solve(
        decimate=decimate,
        decimation_factor=decimation_factor,
        plotting=plotting,
        save_results=False,
        wls=wls,
        verbose=not quiet,
    )
    return ident, time.perf_counter() - start


def friction_table(ident: TX40Identification) -> str:
    """Identified vs nominal (config) viscous [N·m·s/rad] and Coulomb [N·m] friction."""
    found = ident.identified_friction()
    nominal = {"fv": ident.identif_config.get("fv", []), "fs": ident.identif_config.get("fs", [])}
    lines = [
        f"  {'joint':<8s} {'fv':>8s} {'fv nom':>8s} {'diff':>7s}   "
        f"{'fs':>8s} {'fs nom':>8s} {'diff':>7s}"
    ]
    for j, joint in enumerate(TX40_JOINTS):
        cells = []
        for kind in ("fv", "fs"):
            value = found[kind].get(joint, float("nan"))
            ref = float(nominal[kind][j]) if j < len(nominal[kind]) else float("nan")
            diff = 100.0 * (value - ref) / ref if ref else float("nan")
            cells.append(f"{value:8.3f} {ref:8.3f} {diff:6.1f}%")
        lines.append(f"  {joint:<8s} {cells[0]}   {cells[1]}")
    for key, value in found["coupled"].items():
        ref = float(ident.identif_config.get(key, 0.0))
        lines.append(f"  {key:<8s} {value:8.4f} (nominal {ref:g})")
    return "\n".join(lines)


def essential_table(ident: TX40Identification) -> str:
    """The essential parameters with their relative std-devs [%]."""
    ess = ident.essential
    lines = [
        f"  {len(ess.names)} essential of {len(ident.params_base)} base parameters "
        f"(max/min relative std {ess.ratio:.1f} <= ratio_essential {ess.ratio_essential:g}); "
        f"residual RMS {ess.rmse_base:.4g} -> {ess.rmse_essential:.4g}"
        + (" (weighted)" if ident._wls_row_weight is not None else "")
    ]
    for name, value, std in zip(ess.names, ess.phi, ess.std_relative, strict=True):
        short = name if len(name) <= 60 else name[:59] + "…"
        lines.append(f"  {short:<60s} {value:12.5g} {std:7.2f}%")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "data_dir",
        nargs="?",
        default=str(DEFAULT_DATA_DIR),
        help="folder with pos_read_data.csv, curr_data.csv and tx40_mdh_modified.urdf",
    )
    parser.add_argument("--config", default=str(CONFIG), help="unified configuration file")
    parser.add_argument("--ols", action="store_true", help="ordinary instead of weighted LS")
    parser.add_argument("--no-decimate", action="store_true", help="fit every sample")
    parser.add_argument("--decimation-factor", type=int, default=10)
    parser.add_argument("--ratio-essential", type=float, default=None)
    parser.add_argument("--plot", action="store_true", help="plot measured vs identified")
    parser.add_argument("--save", default=None, help="save results (yaml/csv/npz) in this folder")
    args = parser.parse_args(argv)

    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        parser.error(f"data folder not found: {data_dir}")
    ident, seconds = run(
        data_dir,
        args.config,
        wls=not args.ols,
        decimate=not args.no_decimate,
        decimation_factor=args.decimation_factor,
        plotting=args.plot,
    )
    if args.ratio_essential is not None:
        ident.compute_essential_parameters(args.ratio_essential)
    print("\nFriction: identified vs nominal (config)")
    print(friction_table(ident))
    print("\nPer-joint torque correlation (fitted rows)")
    for joint, r in ident.joint_correlations().items():
        print(f"  {joint:<8s} {r:.4f}")
    print("\nEssential parameters (Pham & Gautier)")
    print(essential_table(ident))
    print(
        f"\nCondition number {ident.result['condition number']:.4g}, torque correlation "
        f"{ident.correlation:.4f}, {len(ident.tau_noised)} rows, "
        f"initialize + solve: {seconds:.2f} s"
    )
    if args.save:
        saved = ident.save_results(output_dir=args.save) or {}
        for fmt, path in saved.items():
            print(f"saved {fmt}: {path}")
    if not np.isfinite(ident.result["condition number"]):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
