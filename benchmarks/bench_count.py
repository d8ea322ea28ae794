"""What the private row count costs the default path: test accuracy with the count released inside ε (shares
of the smallest target's μ² of 0.02, 0.05 — the default — and 0.1) against the same path reading the exact n
(declared public, n_public=True: what every release disclosed before the count was private).

The default path is `pillar train-private emb.h5 -p pca.h5 --eps E`: k, lr and steps from the rule, the val
rows training beside the private rows. Each repetition is a sweep of its own, so that each draws its own count
(a sweep's seeds share one). Datasets and splits as benchmarks/bench_honest.py (MNIST-5k: 3,600 training rows;
digits: 1,200); δ = 1e-5, PRV, batch 512. The noise is fresh OS entropy: a re-run gives other numbers within
about the ± shown. Run: python benchmarks/bench_count.py [--seeds 10] [--eps 0.1,1] [--dataset mnist,digits]
[--shares 0.02,0.05,0.1]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from bench_heads import demo_splits
from bench_honest import Bench, digits_splits

from pillar_cli.methods.data import SweepData
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.sweep import run_sweep


def default_path(bench: Bench, epsilon: float, seed: int, count: dict) -> tuple[float, float]:
    """(test accuracy, the count the run read) of the default path's one head for one repetition."""
    (x, y), (x_val, y_val) = bench.splits["private"], bench.splits["val"]
    data = SweepData(
        bench.pca,
        np.concatenate([x, x_val]),
        np.concatenate([y, y_val]),
        None,
        None,
        10,
        bench.splits["public"][0],
    )
    result = run_sweep(data, SweepRequest(epsilon=[epsilon], seed=[seed], device="cpu", **count))
    (accuracy,) = bench.test_accuracies(result, result.selection[0])
    return accuracy, result.count.value


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--eps", default="0.1,1")
    parser.add_argument("--dataset", default="mnist,digits")
    parser.add_argument("--shares", default="0.02,0.05,0.1")
    args = parser.parse_args()
    variants = [("exact n (declared public)", {"n_public": True})] + [
        (f"noisy count, share {share:g}", {"count_share": share})
        for share in map(float, args.shares.split(","))
    ]
    print("| dataset | ε | count | test accuracy (mean ± std) | ñ − n (mean ± std) |")
    print("|---|---|---|---|---|")
    for dataset in args.dataset.split(","):
        if dataset == "mnist":
            with tempfile.TemporaryDirectory() as scratch:
                bench = Bench(demo_splits(Path(scratch)), 100, [0])
        else:
            bench = Bench(digits_splits(), 56, [0])
        n = len(bench.splits["private"][0]) + len(bench.splits["val"][0])
        for epsilon in map(float, args.eps.split(",")):
            for name, privacy in variants:
                runs = np.array([default_path(bench, epsilon, seed, privacy) for seed in range(args.seeds)])
                accuracy, error = runs[:, 0], runs[:, 1] - n
                print(
                    f"| {dataset} | {epsilon:g} | {name} | {accuracy.mean():.3f} ± "
                    f"{accuracy.std(ddof=1):.3f} | {error.mean():+.1f} ± {error.std(ddof=1):.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
