"""The default path against the paper's protocol: test accuracy of the one classifier per (ε, repetition) that
`pillar train-private emb.h5 -p pca.h5 --eps E` trains with nothing given (k, lr and steps from the default
rule of methods/rules.py; nothing is chosen on val, so the val rows train the heads beside the private rows:
no label is read outside ε), beside val-selected PILLAR DP-SGD over the demo grid with k also chosen on val
(the paper's protocol: that choice is outside ε), and each ingredient of the default alone.

Datasets: the demo's MNIST-5k splits (`pillar embed --source mnist5k --backbone pixels --seed 0`: 3,200
private, 400 public, 400 val, 1,000 test rows; PCA on the public split, k_max 100), and scikit-learn's digits
(1,797 rows of 64 pixels, shuffled with seed 0: 400 public, 1,000 private, 200 val, 197 test; k_max 56), on
which the rule's constants were not set. δ = 1e-5, PRV, batch 512, clip 1. Run: python
benchmarks/bench_honest.py [--seeds 5] [--eps 0.1,1] [--dataset mnist,digits]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from bench_heads import demo_splits  # the demo's MNIST-5k splits, as `pillar embed` writes them

from pillar_cli import PublicPCA
from pillar_cli.methods.data import SweepData
from pillar_cli.methods.grid import AUTO
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.rules import RULE_FIELDS, rule_k
from pillar_cli.methods.sweep import run_sweep

PAPER_GRID = {"ks": [5, 10, 20, 40, None], "lrs": [0.1, 0.5, 2.0], "steps": [100, 500]}


def digits_splits() -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order].astype(np.float32), y[order]
    return {
        "public": (x[:400], None),
        "private": (x[400:1400], y[400:1400]),
        "val": (x[1400:1600], y[1400:1600]),
        "test": (x[1600:], y[1600:]),
    }


class Bench:
    """One dataset's splits, its public PCA, and test accuracy of the runs a sweep releases."""

    def __init__(self, splits: dict, k_max: int, seeds: list[int]):
        self.splits, self.seeds = splits, seeds
        self.pca = PublicPCA(k_max).fit(splits["public"][0])

    def sweep(
        self,
        epsilon: float,
        method: str = "pillar",
        rules: tuple[str, ...] = (),
        ks=(40,),
        lrs=(0.1,),
        steps=(500,),
        val: str = "select",
    ):
        """`val`: what the val rows do, as train-private's --val: select (choose and score), train, or
        hold-out."""
        (x, y), (x_val, y_val) = self.splits["private"], self.splits["val"]
        if val == "train":
            x, y = np.concatenate([x, x_val]), np.concatenate([y, y_val])
        validation = (x_val, y_val) if val == "select" else (None, None)
        data = SweepData(self.pca, x, y, *validation, 10, self.splits["public"][0])
        given = {"k": list(ks), "lr": list(lrs), "steps": list(steps)}
        ruled = {name: AUTO if name in rules else values for name, values in given.items()}
        return run_sweep(
            data, SweepRequest(method=[method], epsilon=[epsilon], seed=self.seeds, device="cpu", **ruled)
        )

    def test_accuracies(self, result, cell: dict) -> list[float]:
        x, y = self.splits["test"]
        accuracies = []
        for run_id in cell["run_ids"]:
            run = result.runs[run_id]
            rows = self.pca.transform(x, run.key.k) if run.key.k else (x - self.pca.mean_) / self.pca.scale_
            if run.key.method == "public-lda":
                rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
            accuracies.append(run.head.accuracy(rows, y))
        return accuracies

    def released(self, result) -> tuple[list[float], dict]:
        """The one cell's runs (a single configuration), or the cell with the best mean val accuracy (the
        paper)."""
        cell = max(result.selection, key=lambda c: c["val_accuracy_mean"] if len(result.selection) > 1 else 0)
        return self.test_accuracies(result, cell), cell


def rows(bench: Bench, epsilon: float) -> list[tuple[str, str, object]]:
    """(row, what the printed ε covers, sweep result) for one ε."""
    n = len(bench.splits["private"][0]) + len(bench.splits["val"][0])
    k_rule = rule_k(n, epsilon, len(bench.pca.components_))
    return [
        (
            "default: rule's k, lr, steps; val rows train",
            "everything",
            bench.sweep(epsilon, rules=RULE_FIELDS, val="train"),
        ),
        (
            "paper: val over k × lr × steps",
            "training only (choice on val, outside ε)",
            bench.sweep(epsilon, ks=PAPER_GRID["ks"], lrs=PAPER_GRID["lrs"], steps=PAPER_GRID["steps"]),
        ),
        (
            "rule's k, lr, steps; val held out",
            "everything",
            bench.sweep(epsilon, rules=RULE_FIELDS, val="hold-out"),
        ),
        (
            "rule's k only (lr 0.1, 500 steps); val rows train",
            "everything",
            bench.sweep(epsilon, rules=("k",), val="train"),
        ),
        (
            "rule's lr, steps only (k = 40); val rows train",
            "everything",
            bench.sweep(epsilon, rules=("lr", "steps"), val="train"),
        ),
        (
            f"public-lda at the rule's k = {k_rule}; val rows train",
            "everything",
            bench.sweep(epsilon, method="public-lda", ks=(k_rule,), val="train"),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--eps", default="0.1,1")
    parser.add_argument("--dataset", default="mnist,digits")
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    print("| dataset | ε | head | ε covers | k | lr | steps | test accuracy (mean ± std over seeds) |")
    print("|---|---|---|---|---|---|---|---|")
    for dataset in args.dataset.split(","):
        if dataset == "mnist":
            with tempfile.TemporaryDirectory() as scratch:
                bench = Bench(demo_splits(Path(scratch)), 100, seeds)
        else:
            bench = Bench(digits_splits(), 56, seeds)
        for epsilon in map(float, args.eps.split(",")):
            for name, covers, result in rows(bench, epsilon):
                accuracies, cell = bench.released(result)
                print(
                    f"| {dataset} | {epsilon:g} | {name} | {covers} | {cell['k']} | {cell['lr']:.3g} | "
                    f"{cell['steps']} | {np.mean(accuracies):.3f} ± {np.std(accuracies, ddof=1):.3f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
