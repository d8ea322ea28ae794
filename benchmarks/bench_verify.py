"""What verifying an input costs next to the stage that reads it, and what the forked first reading adds.

An embeddings artifact of CIFAR-10's size (45,000 private and 5,000 public rows of 2,048 float32 features,
10,000 test rows) is written once; then, interleaved over rounds: every array's digest recomputed from the
file (what a read of the whole file does, streamed block by block; a read of one split rehashes that split's
arrays only), and `fit-pca` on its public split end to end (read + verify + PCA + write the projection
artifact). Then reading its public split, and reading a small projection
artifact, with the first reading in a forked child (crash_guard.py, as every read runs) and in process only
(as where fork is missing), in a process that has imported torch as the CLI has. Run: python
benchmarks/bench_verify.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
import torch  # noqa: F401  (the CLI's processes are this large when they fork)

from pillar_cli import artifacts
from pillar_cli.artifacts import core as artifact_core
from pillar_cli.artifacts.crash_guard import passes_in_child
from pillar_cli.artifacts.integrity import file_digests
from pillar_cli.projection import fit_public_split


def embeddings(directory: Path) -> Path:
    rng = np.random.default_rng(0)
    parts = {
        name: (
            rng.standard_normal((rows, 2048), dtype=np.float32),
            np.arange(start, start + rows),
            None if name == "public" else rng.integers(0, 10, rows),
            None,
        )
        for name, rows, start in (("private", 45_000, 0), ("public", 5_000, 45_000), ("test", 10_000, 50_000))
    }
    path = directory / "emb.h5"
    artifacts.write(path, artifacts.embeddings_artifact(parts, {"class_names": [str(i) for i in range(10)]}))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = embeddings(Path(scratch))
        timings: dict[str, list[float]] = {"verify": [], "fit-pca": []}
        for round_ in range(args.rounds):
            start = time.perf_counter()
            with h5py.File(path, "r") as h5:
                file_digests(h5)
            timings["verify"].append(time.perf_counter() - start)
            start = time.perf_counter()
            pca = fit_public_split(artifacts.read_split(f"{path}:public"), k_max=200)
            artifacts.write(Path(scratch) / f"pca{round_}.h5", pca.to_artifact())
            timings["fit-pca"].append(time.perf_counter() - start)
        verify, fit = min(timings["verify"]), min(timings["fit-pca"])
        size = path.stat().st_size / 2**20
        print(
            f"embeddings file of {size:.0f} MiB (45,000 + 5,000 + 10,000 rows × 2,048 float32), best of "
            f"{args.rounds} interleaved rounds: rehashing every array {verify:.2f} s "
            f"({size / verify:.0f} MiB/s) = {100 * verify / fit:.1f} % of fit-pca on its public split, "
            f"{fit:.2f} s (which, in the process that wrote the file, rehashes nothing)"
        )
        pca_path = Path(scratch) / "pca0.h5"
        for label, read in (
            ("public split (5,000 × 2,048)", lambda: artifacts.read_split(f"{path}:public")),
            ("projection (200 × 2,048)", lambda: artifacts.read(pca_path, "projection")),
        ):
            guarded, in_process = guard_cost(read, args.rounds)
            print(
                f"reading the {label}: {guarded * 1e3:.1f} ms with the forked first reading, "
                f"{in_process * 1e3:.1f} ms in process only ({guarded / in_process:.2f}×)"
            )


def guard_cost(read, rounds: int) -> tuple[float, float]:
    """Best seconds of `read` with the forked first reading and without it, interleaved over rounds."""
    best = {True: float("inf"), False: float("inf")}
    for _ in range(max(rounds, 5)):
        for forked in (True, False):
            artifact_core.passes_in_child = passes_in_child if forked else (lambda path, check: False)
            start = time.perf_counter()
            read()
            best[forked] = min(best[forked], time.perf_counter() - start)
    artifact_core.passes_in_child = passes_in_child
    return best[True], best[False]


if __name__ == "__main__":
    main()
