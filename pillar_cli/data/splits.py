"""The seeded split of a source into private / public / val / test.

Test comes from the source's own test part when it has one, else from a seeded fraction of the train part.
The rest of the train part is cut into public (stored WITHOUT labels), val and private; the three are
disjoint by construction, so no public row can ever appear in the private split. Where the source names each row's
person (data/groups.py), the cuts are drawn over persons: a person's rows all go to one split, and the fractions
are of rows, met to within one person's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import DataError, UsageError, param

SPLIT_ROLES = {
    "private": "labelled, protected: only DP training may touch its labels",
    "public": "unlabelled, public: fits the scaler and projection",
    "val": "labelled, drawn from the private pool: hyper-parameter selection (not accounted in ε)",
    "test": "labelled, held out: final evaluation only",
}


@dataclass(frozen=True)
class SplitPlan:
    public_fraction: float = 0.1
    val_fraction: float = 0.1
    test_fraction: float = 0.2
    seed: int = 0
    no_public_split: bool = False  # an artifact without public rows (an evaluation-only set) is asked for explicitly

    def validate(self) -> None:
        for name in ("public_fraction", "val_fraction", "test_fraction"):
            value = getattr(self, name)
            upper_ok = value <= 1.0 if name == "test_fraction" else value < 1.0  # all-test: an evaluation-only set
            if not (0.0 <= value and upper_ok):
                raise UsageError(f"{param(name)} must be in [0, 1{']' if name == 'test_fraction' else ')'}"
                                 f"; got {value}")
        if self.public_fraction + self.val_fraction >= 1.0:
            raise UsageError(f"{param('public_fraction')} + {param('val_fraction')} must leave rows for the private split")


def make_splits(n_train: int, n_test: int, plan: SplitPlan,
                persons: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Sorted source row ids per split; test ids are offset by n_train when the source has its own test part.
    `persons`: each source row's person (train part, then test part), drawn to the splits whole."""
    plan.validate()
    rng = np.random.default_rng(plan.seed)
    units = _Units.of(n_train, persons, n_test)
    order = units.permuted(rng)
    if n_test:
        test = np.arange(n_train, n_train + n_test)
    else:
        test, order = units.cut(order, plan.test_fraction * n_train)
    rows_left = units.rows_of(order).size
    public, order = units.cut(order, plan.public_fraction * rows_left)
    val, private = units.cut(order, plan.val_fraction * rows_left)
    splits = {"private": units.rows_of(private), "public": units.rows_of(public), "val": units.rows_of(val),
              "test": test if n_test else units.rows_of(test)}
    if not len(splits["public"]) and not plan.no_public_split:
        raise UsageError(f"these fractions leave no public split ({param('public_fraction')} {plan.public_fraction}, "
                         f"{param('test_fraction')} {plan.test_fraction}): nothing could be fitted without private "
                         "data", hint=f"pass {param('no_public_split', True)} for an evaluation-only set")
    return {name: np.sort(ids).astype(np.int64) for name, ids in splits.items() if len(ids)}


@dataclass(frozen=True)
class _Units:
    """What a split draws whole: a row each, or a person's rows."""

    members: list[np.ndarray] | None  # rows of each person (None: every row is its own unit)
    n_train: int

    @classmethod
    def of(cls, n_train: int, persons: np.ndarray | None, n_test: int) -> _Units:
        if persons is None:
            return cls(None, n_train)
        if n_test and (both := np.intersect1d(persons[:n_train], persons[n_train:])).size:
            raise DataError(f"{both.size} persons have rows in both the source's train and test parts: a person's "
                            "rows must all be on one side", hint="regroup the source, or move those rows")
        order = np.argsort(persons[:n_train], kind="stable")
        bounds = np.flatnonzero(np.diff(persons[:n_train][order])) + 1
        return cls(np.split(order, bounds), n_train)

    def permuted(self, rng: np.random.Generator) -> np.ndarray:
        return rng.permutation(self.n_train if self.members is None else len(self.members))

    def rows_of(self, units: np.ndarray) -> np.ndarray:
        if self.members is None:
            return units
        return np.concatenate([self.members[u] for u in units]) if len(units) else np.empty(0, np.int64)

    def cut(self, order: np.ndarray, rows: float) -> tuple[np.ndarray, np.ndarray]:
        """The first units of `order` holding about `rows` rows (round(rows) for rows; persons until their rows
        reach it, the last one included if that lands nearer), and the rest."""
        target = int(round(rows))
        if self.members is None or target == 0:
            return order[:target], order[target:]
        cumulative = np.cumsum([len(self.members[u]) for u in order])
        count = int(np.searchsorted(cumulative, target))  # persons before the one that reaches the target
        if count < len(order) and cumulative[count] - target <= target - (cumulative[count - 1] if count else 0):
            count += 1
        return order[:count], order[count:]
