"""Bytes written and time of ``save_results()`` against the identification it saves.

UR10, ``--samples`` training + as many held-out samples (default 10 000, as
in ``bench_identification.py``; try ``--samples 100000``):
``initialize()`` + ``solve(decimate=False, plotting=False)`` is timed once,
then ``save_results()`` (default layout: summary in YAML/CSV/NPZ) and
``save_results(include_arrays=True)`` (per-sample arrays added to the NPZ)
are timed ``--repeats`` times each (best kept). Prints the bytes of every
file and the save / identification time ratio (goal: under 1 MB and under
10 % by default).

    .venv/bin/python benchmarks/bench_save_results.py [--samples 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "ur10"))

from identification import CONFIG, UR10Identification, generate_ur10_data  # noqa: E402
from simulate import load_ur10  # noqa: E402


def _save(ident: UR10Identification, folder: Path, repeats: int, **kw) -> tuple[float, dict]:
    best, sizes = float("inf"), {}
    for k in range(repeats):
        out = folder / f"r{k}"
        start = time.perf_counter()
        saved = ident.save_results(str(out), **kw)
        best = min(best, time.perf_counter() - start)
        sizes = {fmt: Path(p).stat().st_size for fmt, p in saved.items()}
    return best, sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    robot = load_ur10()
    with tempfile.TemporaryDirectory() as tmp:
        train, validation = generate_ur10_data(
            tmp, n_samples=args.samples, noise_std=0.5, robot=robot
        )
        ident = UR10Identification(robot, CONFIG, data_dir=train)
        ident.identif_config["validation_data_file"] = str(validation)
        with contextlib.redirect_stdout(io.StringIO()):
            start = time.perf_counter()
            ident.initialize()
            ident.solve(decimate=False, plotting=False)
            t_ident = time.perf_counter() - start
        rows = [
            ("save_results()", _save(ident, Path(tmp) / "summary", args.repeats)),
            (
                "save_results(include_arrays=True)",
                _save(ident, Path(tmp) / "arrays", args.repeats, include_arrays=True),
            ),
        ]
    print(f"UR10, {args.samples} training + {args.samples} validation samples")
    print(f"initialize() + solve(decimate=False): {t_ident * 1e3:9.1f} ms")
    for label, (t_save, sizes) in rows:
        total = sum(sizes.values())
        files = ", ".join(f"{fmt} {n / 1e3:.1f} kB" for fmt, n in sizes.items())
        print(f"{label}: {t_save * 1e3:9.1f} ms, {total / 1e6:.3f} MB ({files})")
        print(f"  save / identification time: {t_save / t_ident:6.3f}")


if __name__ == "__main__":
    main()
