"""Peak memory and time of fit-pca, train-private and evaluate as n grows to ImageNet size, on synthetic
ImageNet-shaped features: 1,000 classes, their means and most of the variance in a 64-dimensional subspace of
2,048 dimensions. The features are written straight into an embeddings artifact a block of rows at a time (a
scratch file copied by `artifacts.write`, which hashes it by blocks), so that making them holds no n × d
array. With --ingest they are instead written, a block at a time, as a user's own feature files, an HDF5 file
and an uncompressed npz of the same rows (x float32, y, class_names), and brought in by `pillar embed --source
h5` and `--source npz`; the later stages read the artifact embed made of the h5. Each stage runs as a child
process; its peak RSS is its `ru_maxrss`.

    python benchmarks/bench_scale.py --rows 160000,320000,640000,1280000 --workdir runs/scale
    python benchmarks/bench_scale.py --rows 160000,320000,640000,1280000 --ingest --workdir runs/scale
"""

from __future__ import annotations

import argparse
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
from timing import measured

from pillar_cli.artifacts import write
from pillar_cli.artifacts.embeddings import embeddings_artifact

SHARES = {"private": 0.9, "public": 0.0625, "test": 0.0375}  # bench_memory.py's embed fractions
BLOCK = 65_536


def synthetic_blocks(
    rows: int, dim: int, classes: int, seed: int = 0
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(features, labels) of `rows` synthetic rows, BLOCK rows at a time; one class structure, the rows
    drawn as `seed` says."""
    structure, rng = np.random.default_rng(0), np.random.default_rng([1, seed])
    means, basis = 3 * structure.standard_normal((classes, 64)), structure.standard_normal((64, dim)) / 8
    for start in range(0, rows, BLOCK):
        y = rng.integers(0, classes, min(BLOCK, rows - start))
        z = means[y] + rng.standard_normal((len(y), 64))
        yield (z @ basis + 0.1 * rng.standard_normal((len(y), dim))).astype(np.float32), y


def synthetic_embeddings(path: Path, rows: int, dim: int, classes: int) -> dict[str, int]:
    """An embeddings artifact of `rows` synthetic rows split as SHARES; returns each split's rows."""
    sizes = {name: int(rows * share) for name, share in SHARES.items()}
    scratch = path.with_suffix(".scratch.h5")
    splits, first = {}, 0
    with h5py.File(scratch, "w") as h5:
        for seed, (name, size) in enumerate(sizes.items()):
            features = h5.create_dataset(name, (size, dim), np.float32, chunks=(max(1, 2**20 // dim), dim))
            labels = np.empty(size, np.int64)
            for start, (x, y) in zip(range(0, size, BLOCK), synthetic_blocks(size, dim, classes, seed)):
                features[start : start + len(x)], labels[start : start + len(y)] = x, y
            splits[name] = (features, first + np.arange(size), None if name == "public" else labels, None)
            first += size
        write(
            path, embeddings_artifact(splits, {"class_names": [f"c{c}" for c in range(classes)]}), force=True
        )
    scratch.unlink()
    return sizes


def own_feature_files(folder: Path, rows: int, dim: int, classes: int) -> tuple[Path, Path]:
    """The same synthetic rows as a user's HDF5 file and uncompressed npz, each written a block at a time."""
    names = np.array([f"c{c}" for c in range(classes)])
    labels = np.empty(rows, np.int64)
    h5_path, npz_path = folder / "rows.h5", folder / "rows.npz"
    with h5py.File(h5_path, "w") as h5, zipfile.ZipFile(npz_path, "w", zipfile.ZIP_STORED) as npz:
        x = h5.create_dataset("x", (rows, dim), np.float32)
        with npz.open("x.npy", "w", force_zip64=True) as member:
            header = {"descr": "<f4", "fortran_order": False, "shape": (rows, dim)}
            np.lib.format.write_array_header_2_0(member, header)
            for start, (block, y) in zip(range(0, rows, BLOCK), synthetic_blocks(rows, dim, classes)):
                x[start : start + len(block)], labels[start : start + len(y)] = block, y
                member.write(block.tobytes())
        h5["y"], h5["class_names"] = labels, names.astype("S")
        for name, array in (("y", labels), ("class_names", names)):
            with npz.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, array)
    return h5_path, npz_path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", default="160000,320000,640000,1280000")
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--workdir", type=Path, default=Path("runs/scale"))
    parser.add_argument("--ingest", action="store_true", help="bring the rows in through embed (docstring)")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    pillar = [sys.executable, "-m", "pillar_cli"]
    ingest_columns = "embed --source h5 s / MiB | embed --source npz s / MiB | " if args.ingest else ""
    print(
        f"| rows | private MiB | write s | {ingest_columns}fit-pca s / MiB | train-private s / MiB | "
        "evaluate s / MiB |"
    )
    print("|---|---|---|" + "---|" * (5 if args.ingest else 3))
    for rows in (int(n) for n in args.rows.split(",")):
        work = args.workdir / str(rows)
        work.mkdir(exist_ok=True)
        emb, pca, model = work / "emb.h5", work / "pca.h5", work / "model.h5"
        start = time.perf_counter()
        ingest: list[list[str]] = []
        if args.ingest:
            sources = own_feature_files(work, rows, args.dim, args.classes)
            ingest = [
                [*pillar, "embed", "--source", kind, "--path", str(source), "-o", str(out), "--force"]
                for kind, source, out in zip(("h5", "npz"), sources, (emb, work / "emb-npz.h5"))
            ]
        else:
            synthetic_embeddings(emb, rows, args.dim, args.classes)
        written = time.perf_counter() - start
        cells = [f"{seconds:.1f} / {peak:,.0f}" for seconds, peak in map(measured, ingest)]
        if args.ingest:
            for path in (*sources, work / "emb-npz.h5"):
                path.unlink()
        with h5py.File(emb, "r") as h5:
            private = len(h5["splits/private/labels"])
        delta = f"{10 ** -np.ceil(np.log10(private)):g}"  # below 1/n
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
        cells += [f"{seconds:.1f} / {peak:,.0f}" for seconds, peak in map(measured, stages)]
        private_mib = private * args.dim * 4 / 2**20
        print(f"| {rows:,} | {private_mib:,.0f} | {written:.0f} | {' | '.join(cells)} |", flush=True)
        emb.unlink()


if __name__ == "__main__":
    main()
