"""Start-up of the command line: wall-clock seconds of child processes, median of --repeats, side by side with
`python -c pass` (the interpreter alone).

Rows: `pillar --help`; `pillar <command> --help` for every command (a command's help imports its module);
`pillar inspect` of a small projection artifact (reads, verifies and prints it).
Run: python benchmarks/bench_startup.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pillar_cli import artifacts
from pillar_cli.artifacts import Artifact
from pillar_cli.cli import COMMANDS


def median_seconds(argv: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    pillar = [sys.executable, "-m", "pillar_cli"]
    with tempfile.TemporaryDirectory() as scratch:
        projection = Path(scratch) / "pca.h5"
        arrays = {
            "mean": np.zeros(64),
            "scale": np.ones(64),
            "components": np.eye(8, 64),
            "eigenvalues": np.ones(64),
        }
        artifacts.write(
            projection,
            Artifact("projection", arrays, {"k_max": 8, "standardized": True, "rank": 8, "n_public": 100}),
        )
        rows = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "pillar --help": [*pillar, "--help"],
            **{f"pillar {name} --help": [*pillar, name, "--help"] for name in COMMANDS},
            "pillar inspect pca.h5": [*pillar, "inspect", str(projection)],
        }
        baseline = None
        print(f"| command | median of {args.repeats} (s) | minus the interpreter (s) |\n|---|---|---|")
        for label, argv in rows.items():
            seconds = median_seconds(argv, args.repeats)
            baseline = seconds if baseline is None else baseline
            print(f"| `{label}` | {seconds:.3f} | {seconds - baseline:.3f} |")


if __name__ == "__main__":
    main()
