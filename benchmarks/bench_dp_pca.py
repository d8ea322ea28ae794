"""PILLAR without public data: the default path on a DP-PCA of the private split (`fit-pca FILE:private
--dp-eps`) against the default path on the public split's PCA and against full-dimensional DP-SGD (`--method
dpsgd`), at a total ε of 0.1 and 1 that covers everything (the DP-PCA's release is composed into every run's ε
by train-private).

The DP-PCA takes half the total ε; the head's target is set so that the composition stays within the total
(two Gaussian releases compose in quadrature: at a total of 1 the head keeps 0.9, at 0.1 it keeps 0.092; δ =
1e-5 each, 2e-5 together). Each seed refits the DP-PCA with fresh noise (its default: 200 components, or all
for digits); the head's k is the default rule's. Data as benchmarks/bench_second_order.py: Fashion-MNIST
through the ImageNet EfficientNet-Lite0 (the embeddings of benchmarks/bench_real.py), MNIST-5k and digits
pixels. Each stage is the pillar command a user runs. Run: python benchmarks/bench_dp_pca.py [--real
runs/real/fashion-lite0.h5] [--seeds 5] [--workdir runs/dp-pca]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

SPLITS = {0.1: (0.05, 0.092), 1.0: (0.5, 0.9)}  # total ε: (the DP-PCA's ε, the head's target)


def pillar(*args: object) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "pillar_cli", *map(str, args), "--json"], capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(f"pillar {args[0]} failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout) if done.stdout.strip() else {}


def accuracy(model: Path, emb: Path, work: Path) -> list[tuple[float, float, str]]:
    """(test accuracy, ε spent, k) of each seed's head."""
    rows = pillar("evaluate", model, "-e", f"{emb}:test", "-o", work / "eval.h5", "--force")["rows"]
    return [(a, row["epsilon_spent"], str(row["k"])) for row in rows for a in row["accuracies"]]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--real", type=Path, default=Path("runs/real/fashion-lite0.h5"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("runs/dp-pca"))
    args = parser.parse_args()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    datasets = {"Fashion-MNIST, Lite0 features": args.real}
    for source in ("mnist5k", "digits"):
        datasets[f"{source} pixels"] = work / f"{source}.h5"
        if not datasets[f"{source} pixels"].exists():
            pillar(
                "embed",
                "--source",
                source,
                "--backbone",
                "pixels",
                "--seed",
                "0",
                "-o",
                work / f"{source}.h5",
            )
    seeds = ",".join(map(str, range(args.seeds)))
    print("| data | total ε | DP-SGD, all features | PILLAR, public PCA | PILLAR, DP-PCA (no public data) |")
    print("|---|---|---|---|---|")
    for name, emb in datasets.items():
        dim = pillar("fit-pca", f"{emb}:public", "-o", work / "pca.h5", "--force", "--k-max", "1")["dim"]
        k_max = min(200, dim // 2)
        pillar("fit-pca", f"{emb}:public", "--k-max", k_max, "-o", work / "pca.h5", "--force")
        for total, (pca_eps, head_eps) in SPLITS.items():
            cells = []
            for method in ("dpsgd", "pillar"):
                pillar(
                    "train-private",
                    emb,
                    "-p",
                    work / "pca.h5",
                    "--method",
                    method,
                    "--eps",
                    total,
                    "--seed",
                    seeds,
                    "-o",
                    work / "model.h5",
                    "--force",
                )
                cells.append(accuracy(work / "model.h5", emb, work))
            private = []
            for seed in range(args.seeds):
                pillar("fit-pca", f"{emb}:private", "--dp-eps", pca_eps, "-o", work / "dppca.h5", "--force")
                pillar(
                    "train-private",
                    emb,
                    "-p",
                    work / "dppca.h5",
                    "--eps",
                    head_eps,
                    "--seed",
                    seed,
                    "-o",
                    work / "model.h5",
                    "--force",
                )
                private += accuracy(work / "model.h5", emb, work)
            cells.append(private)
            print(f"| {name} | {total:g} | " + " | ".join(_cell(c) for c in cells) + " |", flush=True)


def _cell(runs: list[tuple[float, float, str]]) -> str:
    scores = [a for a, _, _ in runs]
    ks = sorted({k for _, _, k in runs})
    return (
        f"{np.mean(scores):.3f} ± {np.std(scores, ddof=1):.3f} (ε {max(e for _, e, _ in runs):.3g}, "
        f"k {'/'.join(ks)})"
    )


if __name__ == "__main__":
    main()
