"""Reports demo: two UR10 identifications, their HTML reports and the compare page.

1. simulate two UR10 datasets with different seeds (training + held-out
   trajectory each) and identify the base parameters of each;
2. write, per run, the self-contained HTML quality report
   (``identification_report.html``) and the strict-JSON verdict
   (``identification_verification.json``, prediction scope with explicit
   per-joint ``validation_rmse:<joint>`` limits);
3. write the static two-run compare page (``compare.html``): open it in a
   browser and drop the two JSON files on it.

Run ``python examples/ur10/report_demo.py [--out results/report_demo]``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from identification import CONFIG, UR10Identification, generate_ur10_data  # noqa: E402
from simulate import load_ur10  # noqa: E402

from figaroh.tools.compare_report import generate_compare_page  # noqa: E402

#: Per-joint prediction limit used by the demo [N·m] (3 × the simulated noise std).
DEMO_RMSE_LIMIT = 1.5


@dataclass
class DemoRun:
    """One identification of the demo and the files written for it."""

    seed: int
    ident: UR10Identification
    report: Path
    verification: Path


def identify(
    out_dir: str | Path,
    seed: int,
    n_samples: int = 2000,
    noise_std: float = 0.5,
    config=CONFIG,
    robot=None,
) -> UR10Identification:
    """Simulate one UR10 dataset and identify it (quiet, no plots).

    Args:
        out_dir: Folder for the simulated CSV logs.
        seed: Random seed of the simulated trajectory and noise.
        n_samples: Samples per trajectory.
        noise_std: Torque noise standard deviation [N·m].
        config: Unified configuration file.
        robot: A loaded UR10 (loaded when None).

    Returns:
        The solved identification (held-out validation loaded).
    """
    robot = robot or load_ur10()
    train, validation = generate_ur10_data(out_dir, n_samples, noise_std, seed, robot)
    ident = UR10Identification(robot, config, data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    ident.solve(decimate=False, plotting=False, verbose=False)
    return ident


def write_run(ident: UR10Identification, run_dir: str | Path, limit: float = DEMO_RMSE_LIMIT):
    """Write the HTML report and the prediction-scope verdict of one run.

    Returns:
        ``(report_path, verification_path)``.
    """
    run_dir = Path(run_dir)
    thresholds = {
        f"validation_rmse:{j}": {"threshold": limit, "comparison": "max"}
        for j in ident.identif_config["active_joints"]
    }
    report = ident.export_html_report(output_dir=str(run_dir))
    verification = ident.export_verification_report(
        output_dir=str(run_dir), thresholds=thresholds, scope="prediction"
    )
    return Path(report), Path(verification)


def run_demo(
    out_dir: str | Path = "results/report_demo", seeds=(0, 1), n_samples: int = 2000
) -> tuple[list[DemoRun], Path]:
    """Identify one UR10 run per seed, write their reports and the compare page.

    Returns:
        ``(runs, compare_page_path)``.
    """
    out = Path(out_dir)
    robot = load_ur10()
    runs = []
    for seed in seeds:
        ident = identify(out / f"seed{seed}" / "data", seed, n_samples, robot=robot)
        report, verification = write_run(ident, out / f"seed{seed}")
        runs.append(DemoRun(seed, ident, report, verification))
    compare = out / "compare.html"
    generate_compare_page(output_path=str(compare))
    return runs, compare


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="results/report_demo")
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    runs, compare = run_demo(args.out, n_samples=args.samples)
    for r in runs:
        verdict = r.ident.verify(
            {
                f"validation_rmse:{j}": {"threshold": DEMO_RMSE_LIMIT, "comparison": "max"}
                for j in r.ident.identif_config["active_joints"]
            }
        )
        print(f"seed {r.seed}: verdict {verdict.status}")
        print(f"  report        {r.report}")
        print(f"  verification  {r.verification}")
    print(f"compare page    {compare}  (open it and drop the two JSON files on it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
