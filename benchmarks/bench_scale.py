"""Peak memory and time of fit-pca, train-private and evaluate as n grows to ImageNet size, on synthetic
ImageNet-shaped features: 1,000 classes, their means and most of the variance in a 64-dimensional subspace of
2,048 dimensions. The features are written straight into an embeddings artifact a block of rows at a time (a
scratch file copied by `artifacts.write`, which hashes it by blocks), so that making them holds no n × d
array; embed's own memory is measured by bench_memory.py. Each stage runs as a child process; its peak RSS is
its `ru_maxrss`.

    python benchmarks/bench_scale.py --rows 160000,320000,640000,1280000 --workdir runs/scale
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import h5py
import numpy as np
from timing import measured

from pillar_cli.artifacts import write
from pillar_cli.artifacts.embeddings import embeddings_artifact

SHARES = {"private": 0.9, "public": 0.0625, "test": 0.0375}  # bench_memory.py's embed fractions
BLOCK = 65_536


def synthetic_embeddings(path: Path, rows: int, dim: int, classes: int) -> dict[str, int]:
    """An embeddings artifact of `rows` synthetic rows split as SHARES; returns each split's rows."""
    rng = np.random.default_rng(0)
    means, basis = 3 * rng.standard_normal((classes, 64)), rng.standard_normal((64, dim)) / 8
    sizes = {name: int(rows * share) for name, share in SHARES.items()}
    scratch = path.with_suffix(".scratch.h5")
    splits, first = {}, 0
    with h5py.File(scratch, "w") as h5:
        for name, size in sizes.items():
            features = h5.create_dataset(name, (size, dim), np.float32, chunks=(max(1, 2**20 // dim), dim))
            labels = rng.integers(0, classes, size)
            for start in range(0, size, BLOCK):
                y = labels[start : start + BLOCK]
                z = means[y] + rng.standard_normal((len(y), 64))
                features[start : start + len(y)] = (
                    z @ basis + 0.1 * rng.standard_normal((len(y), dim))
                ).astype(np.float32)
            splits[name] = (features, first + np.arange(size), None if name == "public" else labels, None)
            first += size
        write(
            path, embeddings_artifact(splits, {"class_names": [f"c{c}" for c in range(classes)]}), force=True
        )
    scratch.unlink()
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", default="160000,320000,640000,1280000")
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--workdir", type=Path, default=Path("runs/scale"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    pillar = [sys.executable, "-m", "pillar_cli"]
    print("| rows | private MiB | write s | fit-pca s / MiB | train-private s / MiB | evaluate s / MiB |")
    print("|---|---|---|---|---|---|")
    for rows in (int(n) for n in args.rows.split(",")):
        work = args.workdir / str(rows)
        work.mkdir(exist_ok=True)
        emb, pca, model = work / "emb.h5", work / "pca.h5", work / "model.h5"
        start = time.perf_counter()
        sizes = synthetic_embeddings(emb, rows, args.dim, args.classes)
        written = time.perf_counter() - start
        delta = f"{10 ** -np.ceil(np.log10(sizes['private'])):g}"  # below 1/n
        stages = [
            [*pillar, "fit-pca", f"{emb}:public", "--k-max", "200", "-o", str(pca), "--force"],
            [
                *pillar,
                "train-private",
                str(emb),
                "-p",
                str(pca),
                "--eps",
                "1",
                "--delta",
                delta,
                "-o",
                str(model),
                "--force",
            ],
            [*pillar, "evaluate", str(model), "-e", f"{emb}:test", "-o", str(work / "eval.h5"), "--force"],
        ]
        cells = [f"{seconds:.1f} / {peak:,.0f}" for seconds, peak in map(measured, stages)]
        private_mib = sizes["private"] * args.dim * 4 / 2**20
        print(f"| {rows:,} | {private_mib:,.0f} | {written:.0f} | {' | '.join(cells)} |", flush=True)
        emb.unlink()


if __name__ == "__main__":
    main()
