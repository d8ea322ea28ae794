"""The keyed split of a source into private / public / val / test.

Test comes from the source's own test part when it has one, else from a fraction of the train part. The rest
of the train part is cut into public (stored WITHOUT labels), val and private; the three are disjoint by
construction, so no public row can ever appear in the private split. Each row's split is decided by its own
keyed draw (data/keys.py) — a function of the row (or, where the source names persons, of its person) and the
public seed alone — so deleting one record or one person from the source moves no other row: the fractions are
met in expectation, not exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pillar_cli.data.dataset import Dataset
from pillar_cli.data.given_splits import declared_splits
from pillar_cli.data.keys import SPLIT, keyed_draws, named_keys
from pillar_cli.errors import DataError, UsageError, param

SPLIT_ROLES = {
    "private": "labelled, protected: only DP training may touch its labels",
    "public": "unlabelled, public: fits the scaler and projection",
    "val": "labelled, drawn from the private pool: hyper-parameter selection (not accounted in ε)",
    "test": "labelled, held out: final evaluation only",
}
DEFAULT_PUBLIC_FRACTION = 0.1  # of the train part, where the source names no persons


@dataclass(frozen=True)
class SplitPlan:
    # None: DEFAULT_PUBLIC_FRACTION, where the source names no persons (for_source)
    public_fraction: float | None = None
    val_fraction: float = 0.1
    test_fraction: float = 0.2
    seed: int = 0
    # an artifact without public rows (an evaluation-only set) is asked for explicitly
    no_public_split: bool = False
    split_from: Path | None = None  # each row's split named by the holder (data/given_splits.py): no draw

    def for_source(self, dataset: Dataset) -> SplitPlan:
        """The plan with its public fraction set: as given; DEFAULT_PUBLIC_FRACTION where the rows name no
        persons; none with --no-public-split. Where they name persons it is drawn only when asked: the public
        split is one person in ten of the holder's own source, used without protection."""
        if self.public_fraction is not None or self.split_from is not None:
            return self
        if self.no_public_split:
            return replace(self, public_fraction=0.0)
        if dataset.groups is not None:
            raise UsageError(
                f"source '{dataset.name}' names each row's person ({dataset.groups.source}): a public split "
                f"drawn from it would use about one person in {round(1 / DEFAULT_PUBLIC_FRACTION)} of your "
                "own source without protection",
                hint=f"pass {param('public_fraction')} F to draw one anyway (every statement then says how "
                f"many of your records it used), or {param('no_public_split', True)} and fit the "
                f"projection on a separate public source (train-private {param('other_public', True)})",
            )
        return replace(self, public_fraction=DEFAULT_PUBLIC_FRACTION)

    def validate(self) -> None:
        for name in ("public_fraction", "val_fraction", "test_fraction"):
            value = getattr(self, name)
            # all-test: an evaluation-only set
            upper_ok = value <= 1.0 if name == "test_fraction" else value < 1.0
            if not (value >= 0.0 and upper_ok):
                raise UsageError(
                    f"{param(name)} must be in [0, 1{']' if name == 'test_fraction' else ')'}; got {value}"
                )
        if self.public_fraction + self.val_fraction >= 1.0:
            raise UsageError(
                f"{param('public_fraction')} + {param('val_fraction')} must leave rows for the private split"
            )


def make_splits(dataset: Dataset, plan: SplitPlan) -> dict[str, np.ndarray]:
    """Sorted source row ids per split; test ids are offset by the train part's size when the source has its
    own."""
    plan = plan.for_source(dataset)
    if plan.split_from is not None:
        return _given(dataset, plan)
    plan.validate()
    n_train, n_test = dataset.part_sizes[0], sum(dataset.part_sizes[1:])
    draws = split_draws(dataset, plan.seed)[:n_train]
    rows = np.arange(n_train)
    if n_test:
        test, rest = np.arange(n_train, n_train + n_test), np.ones(n_train, dtype=bool)
    else:
        test, rest = rows[draws < plan.test_fraction], draws >= plan.test_fraction
    within = (draws - plan.test_fraction) / max(1.0 - plan.test_fraction, 1e-12) if not n_test else draws
    public = rest & (within < plan.public_fraction)
    val = rest & ~public & (within < plan.public_fraction + plan.val_fraction)
    splits = {"private": rows[rest & ~public & ~val], "public": rows[public], "val": rows[val], "test": test}
    if not len(splits["public"]) and not plan.no_public_split and dataset.groups is not None:
        persons = len(np.unique(dataset.groups.ids[:n_train]))
        raise UsageError(
            f"none of the {persons} persons the source names drew the public split (each person's rows "
            f"go to one split, drawn at {param('public_fraction')} {plan.public_fraction}): nothing could "
            "be fitted without private data",
            hint=f"embed a source of more persons, raise "
            f"{param('public_fraction')}, or pass {param('no_public_split', True)} for an evaluation-only "
            "set",
        )
    if not len(splits["public"]) and not plan.no_public_split and plan.public_fraction == 0:
        raise UsageError(
            f"these fractions leave no public split ({param('public_fraction')} {plan.public_fraction}, "
            f"{param('test_fraction')} {plan.test_fraction}): nothing could be fitted without private data",
            hint=f"pass {param('no_public_split', True)} for an evaluation-only set",
        )
    if not len(splits["public"]) and not plan.no_public_split:  # a source too small for its fraction
        expected = n_train * (1 - (0 if n_test else plan.test_fraction)) * plan.public_fraction
        raise UsageError(
            f"none of the source's {n_train} rows drew the public split ({param('public_fraction')} "
            f"{plan.public_fraction}, {param('test_fraction')} {plan.test_fraction}: about "
            f"{expected:.2g} expected): nothing could be fitted without private data",
            hint=f"embed a source of more rows, raise {param('public_fraction')}, or pass "
            f"{param('no_public_split', True)} for an evaluation-only set",
        )
    return {name: ids.astype(np.int64) for name, ids in splits.items() if len(ids)}


def _given(dataset: Dataset, plan: SplitPlan) -> dict[str, np.ndarray]:
    """The splits `--split-from` names, checked against the labels and persons of every row."""
    if dataset.given_splits is None:
        raise ValueError("a plan with split_from needs the dataset read with_given_splits")
    rows = np.arange(sum(dataset.part_sizes))
    return declared_splits(
        dataset.given_splits,
        dataset.labels_of(rows),
        dataset.class_names,
        n_train=dataset.part_sizes[0],
        persons=None if dataset.groups is None else dataset.groups.ids,
        file=str(plan.split_from),
        public_wanted=not plan.no_public_split,
    )


def split_draws(dataset: Dataset, seed: int) -> np.ndarray:
    """Each source row's split draw: its person's where the source names persons, else its own key's."""
    if dataset.groups is None:
        return keyed_draws(dataset.row_keys(), seed, SPLIT)
    n_train, ids = dataset.part_sizes[0], dataset.groups.ids
    if len(dataset.part_sizes) > 1 and (both := np.intersect1d(ids[:n_train], ids[n_train:])).size:
        raise DataError(
            f"{both.size} persons have rows in both the source's train and test parts: a person's "
            "rows must all be on one side",
            hint="regroup the source, or move those rows",
        )
    persons, row_person = np.unique(ids, return_inverse=True)
    return keyed_draws(named_keys(persons.tolist()), seed, SPLIT)[row_person]
