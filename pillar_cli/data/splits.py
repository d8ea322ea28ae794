"""The seeded split of a source into private / public / val / test.

Test comes from the source's own test part when it has one, else from a seeded fraction of the train part.
The rest of the train part is cut into public (stored WITHOUT labels), val and private; the three are
disjoint by construction, so no public row can ever appear in the private split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import UsageError, param

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


def make_splits(n_train: int, n_test: int, plan: SplitPlan) -> dict[str, np.ndarray]:
    """Sorted source row ids per split; test ids are offset by n_train when the source has its own test part."""
    plan.validate()
    rng = np.random.default_rng(plan.seed)
    order = rng.permutation(n_train)
    if n_test:
        test = np.arange(n_train, n_train + n_test)
    else:
        n_cut = int(round(plan.test_fraction * n_train))
        test, order = order[:n_cut], order[n_cut:]
    n_public = int(round(plan.public_fraction * len(order)))
    n_val = int(round(plan.val_fraction * len(order)))
    splits = {
        "private": order[n_public + n_val:],
        "public": order[:n_public],
        "val": order[n_public:n_public + n_val],
        "test": test,
    }
    if not len(splits["public"]) and not plan.no_public_split:
        raise UsageError(f"these fractions leave no public split ({param('public_fraction')} {plan.public_fraction}, "
                         f"{param('test_fraction')} {plan.test_fraction}): nothing could be fitted without private "
                         "data", hint=f"pass {param('no_public_split', True)} for an evaluation-only set")
    return {name: np.sort(ids).astype(np.int64) for name, ids in splits.items() if len(ids)}
