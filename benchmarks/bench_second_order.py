"""Every private head with one configuration per cell, so that its ε covers everything: the default path
(PILLAR DP-SGD, k, lr and steps by the default rule), dp-ls, public-lda, dp-newton, dp-fc and public-fc at the
rule's k, and dp-fc on all features; test accuracy at ε ∈ {0.1, 1} over fresh noise (seeds 0..S-1), δ = 1e-5,
PRV, every value derived from n read from the released row count.

Data: Fashion-MNIST through the ImageNet EfficientNet-Lite0 (the embeddings `benchmarks/bench_real.py` writes:
16,000 private + 2,000 val rows train, 2,000 public unlabelled, 10,000 test), and the pixels of MNIST-5k and
scikit-learn's digits (`pillar embed --source mnist5k|digits --backbone pixels --seed 0`). The projection is
the public split's PCA (k_max 200, half the dimension for digits' 64 pixels). The val rows join the private
rows (nothing is chosen on them). Run: python benchmarks/bench_second_order.py [--real
runs/real/fashion-lite0.h5] [--seeds 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pillar_cli import PublicPCA, read, sweep
from pillar_cli.methods.catalog import get_method

EPSILONS = (0.1, 1.0)
HEADS = [
    ("default path", "pillar", {"k": "auto", "lr": "auto", "steps": "auto"}),
    ("dp-ls", "dp-ls", {"k": "auto"}),
    ("public-lda", "public-lda", {"k": "auto"}),
    ("dp-newton", "dp-newton", {"k": "auto"}),
    ("dp-fc", "dp-fc", {"k": "auto"}),
    ("public-fc", "public-fc", {"k": "auto"}),
    ("dp-fc, all features", "dp-fc", {"k": [None]}),
]


def splits(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    embeddings = read(path, "embeddings")
    return {
        name: (
            embeddings.array(f"splits/{name}/features"),
            embeddings.array(f"splits/{name}/labels") if name != "public" else None,
        )
        for name in ("private", "public", "val", "test")
    }


def embedded(source: str, directory: Path) -> Path:
    path = directory / f"{source}.h5"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pillar_cli",
            "embed",
            "--source",
            source,
            "--backbone",
            "pixels",
            "--seed",
            "0",
            "-o",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    return path


def accuracies(data: dict, pca: PublicPCA, method: str, epsilon: float, seeds: int, fields: dict) -> tuple:
    """Test accuracy of each seed's head, the largest ε spent and the k the cell trained at."""
    (x, y), (x_val, y_val), (x_test, y_test) = data["private"], data["val"], data["test"]
    result = sweep(
        x,
        y,
        x_val,
        y_val,
        projection=pca,
        public=data["public"][0],
        method=[method],
        epsilon=[epsilon],
        seed=list(range(seeds)),
        delta=1e-5,
        device="cpu",
        **fields,
    )
    mapping = get_method(method).linear_map(pca)
    scores = [
        run.head.accuracy(get_method(method).features(mapping, x_test, run.key.k), y_test)
        for run in result.runs
    ]
    return scores, max(run.epsilon_spent for run in result.runs), result.runs[0].key.k


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--real", type=Path, default=Path("runs/real/fashion-lite0.h5"))
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        datasets = {
            "Fashion-MNIST, Lite0 features": args.real,
            **{f"{source} pixels": embedded(source, Path(tmp)) for source in ("mnist5k", "digits")},
        }
        print("| data | head | k | ε = 0.1 | ε = 1 |\n|---|---|---|---|---|")
        for name, path in datasets.items():
            data = splits(path)
            pca = PublicPCA(min(200, data["public"][0].shape[1] // 2)).fit(data["public"][0])
            for label, method, fields in HEADS:
                started, cells, ks = time.perf_counter(), [], []
                for epsilon in EPSILONS:
                    scores, spent, k = accuracies(data, pca, method, epsilon, args.seeds, fields)
                    cells.append(f"{np.mean(scores):.3f} ± {np.std(scores, ddof=1):.3f} (ε {spent:.3g})")
                    ks.append("full" if k is None else str(k))
                print(
                    f"| {name} | {label} | {' / '.join(ks)} | {' | '.join(cells)} |  <!-- "
                    f"{time.perf_counter() - started:.0f} s -->",
                    flush=True,
                )


if __name__ == "__main__":
    main()
