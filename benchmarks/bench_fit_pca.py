"""fit-pca's fit against the least it must do: `PublicPCA.fit` (standardise, axes, row digests) beside
centring, scaling and `eigh` of the covariance on the same rows, in one process, interleaved; and the peak RSS
of each.

    python benchmarks/bench_fit_pca.py --rows 8000 --dim 2048 --rounds 5
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from pillar_cli.projection.pca import PublicPCA


def covariance_eigh(x: np.ndarray) -> None:
    rows = x.astype(np.float64)
    centred = (rows - rows.mean(axis=0)) / rows.std(axis=0)
    np.linalg.eigh(centred.T @ centred)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--k-max", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    # a concentrated spectrum, as pre-trained features have: 64 strong directions
    rng = np.random.default_rng(0)
    x = (
        rng.standard_normal((args.rows, 64)) @ rng.standard_normal((64, args.dim))
        + 0.1 * rng.standard_normal((args.rows, args.dim))
    ).astype(np.float32)
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
