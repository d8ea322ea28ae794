"""Peak memory and time of the stages on features of CIFAR size: `embed --source npz` (vectors), `fit-pca` and
`train-private --eps 1` (the default path) on N × D float32 features, each a child process measured by its
peak RSS (the `ru_maxrss` of a wrapper's only child), beside a default fit of a digits head from Python and
processes that only import what they import (their floors).

    python benchmarks/bench_memory.py --rows 80000 --dim 2048 --workdir runs/memory python
    benchmarks/bench_memory.py --rows 320000 --dim 2048 --stages-only   # the stages alone, at a larger n
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from timing import measured

DIGITS_FIT = (
    "from sklearn.datasets import load_digits; from pillar_cli import DPLinearClassifier, PublicPCA; "
    "x, y = load_digits(return_X_y=True); x = x.astype('float32'); "
    "DPLinearClassifier(projection=PublicPCA(40).fit(x[1500:])).fit(x[:1500], y[:1500])"
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=80000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--workdir", type=Path, default=Path("runs/memory"))
    parser.add_argument(
        "--stages-only", action="store_true", help="measure the stages, not the import floors"
    )
    args = parser.parse_args()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, 64), dtype=np.float32) @ rng.standard_normal(
        (64, args.dim), dtype=np.float32
    ) + 0.1 * rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    np.savez(
        work / "features.npz", x=x, y=rng.integers(0, 10, args.rows), class_names=np.arange(10).astype(str)
    )
    pillar = [sys.executable, "-m", "pillar_cli"]
    delta = 1e-5 if args.rows <= 90_000 else 1e-6  # below 1/n for the ~90 % of the rows that train
    steps = [
        (
            "a default digits fit (`DPLinearClassifier`, 64 features, k_max 40)",
            [sys.executable, "-c", DIGITS_FIT],
        ),
        (
            "imports only (numpy, scikit-learn, h5py)",
            [sys.executable, "-c", "import numpy, sklearn.decomposition, h5py"],
        ),
        ("imports only (torch)", [sys.executable, "-c", "import torch"]),
        (
            "imports only (torch, scikit-learn, opacus, the sweep)",
            [sys.executable, "-c", "import torch, sklearn, opacus, h5py; import pillar_cli.methods.sweep"],
        ),
        (
            "embed --source npz",
            [
                *pillar,
                "embed",
                "--source",
                "npz",
                "--path",
                str(work / "features.npz"),
                "--public-fraction",
                "0.0625",
                "--val-fraction",
                "0",
                "--test-fraction",
                "0.0375",
                "-o",
                str(work / "emb.h5"),
                "--force",
            ],
        ),
        (
            "fit-pca --k-max 200",
            [
                *pillar,
                "fit-pca",
                f"{work / 'emb.h5'}:public",
                "--k-max",
                "200",
                "-o",
                str(work / "pca.h5"),
                "--force",
            ],
        ),
        (
            f"train-private --eps 1 --delta {delta:g}",
            [
                *pillar,
                "train-private",
                str(work / "emb.h5"),
                "-p",
                str(work / "pca.h5"),
                "--eps",
                "1",
                "--delta",
                str(delta),
                "-o",
                str(work / "model.h5"),
                "--force",
            ],
        ),
    ]
    private_mib = args.rows * (1 - 0.0625 - 0.0375) * args.dim * 4 / 2**20
    print(
        f"{args.rows:,} × {args.dim} float32; the private split read by train-private: {private_mib:.0f} MiB"
    )
    print("| step | s | peak RSS (MiB) |\n|---|---|---|")
    for name, argv in steps[4:] if args.stages_only else steps:
        seconds, peak = measured(argv)
        print(f"| {name} | {seconds:.1f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
