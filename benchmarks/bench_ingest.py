"""Peak memory and time of `pillar embed` bringing one's own features: the same rows as an HDF5 file, an
uncompressed npz (both read a block at a time) and a compressed npz (read whole), float64 as a user's
numpy.save would leave them. Each embed runs as a child process; its peak RSS is its `ru_maxrss`, against
the import floor of an embed of 1,000 rows.

    python benchmarks/bench_ingest.py --rows 400000 --dim 256 --workdir runs/ingest
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import h5py
import numpy as np
from timing import measured


def write_sources(folder: Path, rows: int, dim: int) -> dict[str, Path]:
    """The rows as h5, npz and compressed npz, written a block at a time (the h5) or once (the npz)."""
    rng = np.random.default_rng(0)
    labels, names = rng.integers(0, 10, rows), np.arange(10).astype(str)
    with h5py.File(folder / "rows.h5", "w") as h5:
        x = h5.create_dataset("x", (rows, dim), dtype="f8")
        for start in range(0, rows, 50_000):
            x[start : start + 50_000] = rng.standard_normal((min(50_000, rows - start), dim))
        h5["y"], h5["class_names"] = labels, names.astype("S")
        features = x[()]
    np.savez(folder / "rows.npz", x=features, y=labels, class_names=names)
    np.savez_compressed(folder / "whole.npz", x=features, y=labels, class_names=names)
    return {
        "h5 (by blocks)": folder / "rows.h5",
        "npz (by blocks)": folder / "rows.npz",
        "npz, compressed (whole)": folder / "whole.npz",
    }


def embed(source: str, path: Path, out: Path) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of one embed of `path`."""
    out.unlink(missing_ok=True)
    argv = [
        sys.executable,
        "-m",
        "pillar_cli",
        "embed",
        "--source",
        source,
        "--path",
        str(path),
        "-o",
        str(out),
    ]
    seconds, peak = measured(argv)
    return peak, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--workdir", type=Path, default=Path("runs/ingest"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    sources = write_sources(args.workdir, args.rows, args.dim)
    with h5py.File(args.workdir / "floor.h5", "w") as h5:
        h5["x"], h5["y"] = np.random.default_rng(1).standard_normal((1000, args.dim)), np.arange(1000) % 10
        h5["class_names"] = np.arange(10).astype("S")
    floor, _ = embed("h5", args.workdir / "floor.h5", args.workdir / "e.h5")
    size = args.rows * args.dim * 8 / 2**20
    print(f"{args.rows:,} × {args.dim} float64 ({size:,.0f} MiB); import floor {floor:,.0f} MiB")
    print("| source | peak RSS (MiB) | above the floor | seconds |\n|---|---|---|---|")
    for name, path in sources.items():
        peak, seconds = embed(path.suffix.lstrip("."), path, args.workdir / "e.h5")
        print(f"| {name} | {peak:,.0f} | {peak - floor:,.0f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
