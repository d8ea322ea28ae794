"""The one-release and full-batch heads with the person as the privacy unit: each row's term weighted by
1/(its person's rows), so removing a whole person moves every release by at most its stated sensitivity (a
row-level sum moves by about the person's rows times it); a person of one row is exactly a row; the statement
names the bound."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli import DPLinearClassifier, sweep
from pillar_cli.methods.closed_form import augmented, class_sums, least_squares_statistics
from pillar_cli.methods.prototypes import vote_histogram
from pillar_cli.methods.second_order import (
    GRADIENT_SENSITIVITY,
    GRAM_SENSITIVITY,
    HESSIAN_SENSITIVITY,
    WeightedRows,
    probabilities,
)
from pillar_cli.privacy.unit import person_weights

WEIGHTED_HEADS = ["public-lda", "dp-ls", "dp-prototypes", "public-votes", "dp-newton", "dp-fc", "public-fc"]


def releases(
    rows: np.ndarray, labels: np.ndarray, weights: np.ndarray, head: np.ndarray
) -> dict[str, np.ndarray]:
    """Every sum the weighted heads release, at one current head for the gradient and Hessians."""
    private = WeightedRows(augmented(rows), np.eye(3)[labels], weights)
    probs = probabilities(private.a, head)
    return {
        "class sums": class_sums(rows, labels, 3, weights),
        "votes": vote_histogram(rows, labels, np.eye(rows.shape[1])[:4], 3, weights),
        "least squares": np.hstack(least_squares_statistics(rows, labels, 3, weights)),
        "gram": private.gram(),
        "gradient": private.gradient(head, probs),
        "hessians": np.stack([private.gram(probs[:, c] * (1 - probs[:, c])) for c in range(3)]),
    }


SENSITIVITY = {
    "class sums": 1.0,
    "votes": 1.0,
    "least squares": np.sqrt(2.0),
    "gram": GRAM_SENSITIVITY,
    "gradient": GRADIENT_SENSITIVITY,
    "hessians": HESSIAN_SENSITIVITY,
}


@pytest.mark.parametrize("seed", range(5))
def test_removing_a_whole_person_moves_each_release_by_at_most_its_sensitivity(seed):
    """Persons of 1 to 20 alike unit rows (one direction each, labels mixed): the weighted sums move by at
    most the sensitivity when any one person leaves, the unweighted ones by more for a person of 20 rows."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 21, size=12)
    sizes[0] = 20
    persons = np.repeat(np.arange(len(sizes)), sizes)
    rows = rng.standard_normal((len(sizes), 6))[persons] + 0.05 * rng.standard_normal((len(persons), 6))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    labels = rng.integers(0, 3, size=len(persons))
    head = rng.standard_normal((7, 3))
    for person in range(len(sizes)):
        kept = persons != person
        with_, without = (
            releases(rows[m], labels[m], person_weights(persons[m]), head) for m in (np.ones_like(kept), kept)
        )
        for name, released in with_.items():
            assert np.linalg.norm(released - without[name]) <= SENSITIVITY[name] * (1 + 1e-9), (name, person)
    kept = persons != 0
    with_, without = (
        releases(rows[m], labels[m], np.ones(int(m.sum())), head) for m in (np.ones_like(kept), kept)
    )
    assert all(
        np.linalg.norm(with_[name] - without[name]) > 2 * SENSITIVITY[name]
        for name in ("class sums", "least squares", "gram")
    )


def test_a_person_of_one_row_is_exactly_a_row(digits):
    """Same experiment-only noise, groups of one row each: every weighted head is the row unit's, bit for
    bit."""
    pca, public, x, y = digits
    runs = {
        unit: sweep(
            x,
            y,
            projection=pca,
            public=public,
            method=WEIGHTED_HEADS,
            k=[12],
            epsilon=[1.0],
            delta=1e-4,
            steps=[3],
            noise_seed=0,
            device="cpu",
            groups=groups,
        ).runs
        for unit, groups in (("row", None), ("person", np.arange(len(x))))
    }
    for row, person in zip(runs["row"], runs["person"], strict=True):
        assert row.key.method == person.key.method
        np.testing.assert_array_equal(row.head.weights, person.head.weights)
        np.testing.assert_array_equal(row.head.bias, person.head.bias)


def test_the_weighted_heads_train_persons_and_say_how_they_bound_one(digits):
    pca, public, x, y = digits
    groups = np.arange(len(x)) // 5
    result = sweep(
        x,
        y,
        projection=pca,
        public=public,
        method=WEIGHTED_HEADS,
        k=[12],
        epsilon=[1.0],
        delta=1e-4,
        steps=[3],
        device="cpu",
        groups=groups,
    )
    assert result.plan.unit.is_person and result.count.of == "persons"
    assert sorted(run.key.method for run in result.runs) == sorted(WEIGHTED_HEADS)
    assert all(0.99 <= run.epsilon_spent <= 1.0 for run in result.runs)
    clf = DPLinearClassifier(method="dp-ls", k=12, epsilon=1.0, delta=1e-4).fit(
        x, y, public=public, groups=groups
    )
    assert clf.ledger_.unit.is_person
    assert (
        "per person: each row weighted by 1/(its person's rows) in every released sum, so that a person "
        "moves a release at most as one row does"
    ) in clf.ledger_.covers
