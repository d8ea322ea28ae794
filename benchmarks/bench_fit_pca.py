"""fit-pca's fit against the least it must do: `PublicPCA.fit` (standardise, axes, row digests) beside
centring, scaling and `eigh` of the covariance on the same rows, in one process, interleaved; and the peak RSS
of each. With --end-to-end, the command itself against that least from the file: an embeddings artifact
holding the rows as its public split (and --private-rows more as its private split) is written once, then
`pillar fit-pca FILE:public` (reading, the content hash of the whole file, the fit, the projection written)
and a script reading the public features with h5py and computing the same covariance and `eigh` run as child
processes, interleaved; wall-clock and CPU seconds (user + system, of the child and what it forked).

    python benchmarks/bench_fit_pca.py --rows 8000 --dim 2048 --rounds 5
    python benchmarks/bench_fit_pca.py --rows 16000 --private-rows 144000 --end-to-end --rounds 3
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pillar_cli import artifacts
from pillar_cli.projection.pca import PublicPCA

# what any PCA of the file's public split must do: read the rows, centre and scale them, eigh their covariance
FROM_THE_FILE = (
    "import sys, h5py, numpy as np\n"
    "with h5py.File(sys.argv[1], 'r') as h5:\n"
    "    rows = h5['splits/public/features'][()].astype(np.float64)\n"
    "centred = (rows - rows.mean(axis=0)) / rows.std(axis=0)\n"
    "np.linalg.eigh(centred.T @ centred)\n"
)


def covariance_eigh(x: np.ndarray) -> None:
    rows = x.astype(np.float64)
    centred = (rows - rows.mean(axis=0)) / rows.std(axis=0)
    np.linalg.eigh(centred.T @ centred)


def concentrated(rng: np.random.Generator, rows: int, dim: int) -> np.ndarray:
    """Rows with a concentrated spectrum, as pre-trained features have: 64 strong directions."""
    return (
        rng.standard_normal((rows, 64)) @ rng.standard_normal((64, dim))
        + 0.1 * rng.standard_normal((rows, dim))
    ).astype(np.float32)


def child_seconds(argv: list[str]) -> tuple[float, float]:
    """(wall-clock, CPU) seconds of one child process and what it forked and waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def end_to_end(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as scratch:
        path, out = Path(scratch) / "emb.h5", Path(scratch) / "pca.h5"
        splits = (("private", args.private_rows, 0), ("public", args.rows, args.private_rows))
        parts = {
            name: (
                concentrated(rng, rows, args.dim),
                np.arange(start, start + rows),
                None if name == "public" else rng.integers(0, 10, rows),
                None,
            )
            for name, rows, start in splits
        }
        artifacts.write(
            path, artifacts.embeddings_artifact(parts, {"class_names": [str(i) for i in range(10)]})
        )
        del parts
        runs = {
            "pillar fit-pca FILE:public": [
                *(sys.executable, "-m", "pillar_cli", "fit-pca", f"{path}:public", "-o", str(out)),
                *("--k-max", str(args.k_max), "--force"),
            ],
            "h5py read + covariance + eigh": [sys.executable, "-c", FROM_THE_FILE, str(path)],
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, argv in runs.items():
                times[name].append(child_seconds(argv))
        size = path.stat().st_size / 2**20
        print(
            f"{args.rows:,} public + {args.private_rows:,} private rows × {args.dim} float32 in a file of "
            f"{size:,.0f} MiB; best of {args.rounds} interleaved rounds (wall s / CPU s):"
        )
        best = {
            name: (min(w for w, _ in values), min(c for _, c in values)) for name, values in times.items()
        }
        for name, (wall, cpu) in best.items():
            print(f"  {name}: {wall:.2f} / {cpu:.2f}")
        (wall, cpu), (floor_wall, floor_cpu) = best.values()
        print(f"  ratio: {wall / floor_wall:.2f}× wall-clock, {cpu / floor_cpu:.2f}× CPU")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--k-max", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--end-to-end", action="store_true", help="the command from a file (module docstring)"
    )
    parser.add_argument(
        "--private-rows", type=int, default=0, help="with --end-to-end: the private split's rows"
    )
    args = parser.parse_args()
    if args.end_to_end:
        end_to_end(args)
        return
    x = concentrated(np.random.default_rng(0), args.rows, args.dim)
    times = {"PublicPCA.fit": [], "covariance + eigh": []}
    for _ in range(args.rounds):
        for name, run in (
            ("PublicPCA.fit", lambda: PublicPCA(args.k_max).fit(x)),
            ("covariance + eigh", lambda: covariance_eigh(x)),
        ):
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    best = {name: min(values) for name, values in times.items()}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.rows} × {args.dim} float32 ({x.nbytes / 2**20:.0f} MiB), best of {args.rounds}:")
    for name, seconds in best.items():
        print(f"  {name}: {seconds:.2f} s")
    print(
        f"  ratio: {best['PublicPCA.fit'] / best['covariance + eigh']:.2f}×; process peak RSS {peak:.0f} MiB"
    )


if __name__ == "__main__":
    main()
