"""The semi-private disjunction learner on D_{f,p} (§3.1 of Hu, Pinto, Yang, Sanyal): private rows needed as d
grows, and public rows needed to recover the components, each next to its bound
(pillar_cli/theory/disjunctions.py).

1. Private rows. f: a 3-disjunction, p = 0.8 (Bayes error 0.4 %), 500 public rows (the component graph), 2,000
   test rows, ε = 1 (pure, δ = 0). For each d and number n of private rows, `--seeds` draws of the private
   rows; the methods: em-components (4 candidates), em-disjunctions (all disjunctions of ≤ 3 variables) and
   DP-SGD on the raw bits (one fixed configuration: full batch, 100 steps, lr 1, clip 1, δ = 1/(10n); nothing
   selected). Reported: mean test error, and per method the smallest n whose mean error is ≤ α = 0.05.
2. Public rows. For each (d, k, p), the share of `--seeds` public draws of n_pub rows whose empirical
   components are exactly V⁺ and V⁻; the smallest n_pub with a share ≥ 95 %, next to the union bound at β =
   0.05. Run: python benchmarks/bench_disjunctions.py [--seeds 10] [--part private|public|both]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pillar_cli import sweep
from pillar_cli.data.disjunctions import DisjunctionFamily
from pillar_cli.methods.disjunctions import DisjunctionOptions
from pillar_cli.projection.components import PublicComponents
from pillar_cli.theory.disjunctions import baseline_candidates, private_rows_bound, public_rows_bound

ALPHA, EPSILON, LITERALS = 0.05, 1.0, 3
DIMENSIONS = (40, 100, 200, 400)
PRIVATE_ROWS = (10, 20, 40, 80, 160)
PUBLIC_FAMILIES = ((40, 5, 0.1), (100, 10, 0.05), (400, 10, 0.02))


def test_error(
    method: str,
    family: DisjunctionFamily,
    graph: PublicComponents,
    n: int,
    seed: int,
    test: tuple[np.ndarray, np.ndarray],
) -> float:
    x, y = family.sample(n, np.random.default_rng([seed, n, family.d]))
    if len(np.unique(y)) < 2:
        # one class drawn: the learners cannot run; count a constant guess
        return float((y[0] != test[1]).mean())
    options = (
        {"lr": [1.0], "steps": [100], "batch_size": [n], "delta": 1 / (10 * n)} if method == "dpsgd" else {}
    )
    result = sweep(
        x,
        y,
        projection=graph,
        method=[method],
        k=[None],
        epsilon=[EPSILON],
        seed=[seed],
        method_options={"em-disjunctions": DisjunctionOptions(LITERALS)},
        **options,
    )
    return 1.0 - result.runs[0].head.accuracy(*test)


def private_part(seeds: int) -> None:
    print(
        "| d | method | candidates | bound n (β = 0.05) | "
        + " | ".join(f"n = {n}" for n in PRIVATE_ROWS)
        + " | n for error ≤ 0.05 | s |"
    )
    print("|---" * (len(PRIVATE_ROWS) + 6) + "|")
    for d in DIMENSIONS:
        family = DisjunctionFamily(d, LITERALS, 0.8, seed=0)
        rng = np.random.default_rng([d, 1])
        graph = PublicComponents().fit(family.sample(500, rng)[0].astype(np.float32))
        test = family.sample(2000, rng)
        for method in ("em-components", "em-disjunctions", "dpsgd"):
            start = time.perf_counter()
            errors = [
                np.mean([test_error(method, family, graph, n, s, test) for s in range(seeds)])
                for n in PRIVATE_ROWS
            ]
            needed = next((n for n, e in zip(PRIVATE_ROWS, errors) if e <= ALPHA), None)
            count = {
                "em-components": 2 ** len(graph.components_),
                "em-disjunctions": baseline_candidates(d, LITERALS),
            }.get(method)
            bound = private_rows_bound(count, EPSILON, ALPHA, 0.05) if count else "–"
            print(
                f"| {d} | {method} | {count or '–'} | {bound} | "
                + " | ".join(f"{e:.3f}" for e in errors)
                + f" | {needed or f'> {PRIVATE_ROWS[-1]}'} | {time.perf_counter() - start:.0f} |",
                flush=True,
            )


def recovered(family: DisjunctionFamily, n_public: int, seed: int) -> bool:
    rows, _ = family.sample(n_public, np.random.default_rng([seed, n_public, family.d, 2]))
    graph = PublicComponents().fit(rows.astype(np.float32))
    positive = family.positive_variables
    truth = {tuple(positive), tuple(np.setdiff1d(np.arange(family.d), positive))}
    # every variable seen, two components
    return not graph.unseen_ and {tuple(g) for g in graph.groups()} == truth


def public_part(seeds: int) -> None:
    print(
        "| d | k | p | union bound n_pub (β = 0.05) | smallest n_pub with ≥ 95 % recovered | recovery at "
        "n_pub: share of seeds |"
    )
    print("|---|---|---|---|---|---|")
    for d, k, p in PUBLIC_FAMILIES:
        family = DisjunctionFamily(d, k, p, seed=0)
        bound = public_rows_bound(d, k, p, 0.05)
        sizes = sorted({max(2, int(bound * f)) for f in (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)})
        shares = [np.mean([recovered(family, n, s) for s in range(seeds)]) for n in sizes]
        needed = next((n for n, share in zip(sizes, shares) if share >= 0.95), None)
        print(
            f"| {d} | {k} | {p} | {bound} | {needed} | "
            + ", ".join(f"{n}: {s:.2f}" for n, s in zip(sizes, shares))
            + " |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--part", choices=("private", "public", "both"), default="both")
    args = parser.parse_args()
    if args.part in ("private", "both"):
        private_part(args.seeds)
    if args.part in ("public", "both"):
        public_part(4 * args.seeds)


if __name__ == "__main__":
    main()
