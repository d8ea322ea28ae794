"""The few-shot heads: their releases within sensitivity 1, without noise the classifiers a direct computation
(nearest class mean, scikit-learn's k-means and logistic regression) gives, and on ten digits a class at ε = 1
prototypes well above DP-SGD."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from pillar_cli import UsageError
from pillar_cli.methods.estimator import DPLinearClassifier
from pillar_cli.methods.prototypes import (
    VOTES,
    PrototypeOptions,
    VoteOptions,
    refined_prototypes,
    rule_centres,
    unit_rows,
    vote_histogram,
)
from pillar_cli.projection import PublicPCA, project


@given(
    hnp.arrays(np.float64, st.tuples(st.integers(1, 12), st.just(4)), elements=st.floats(-1e6, 1e6)),
    hnp.arrays(np.float64, 4, elements=st.floats(-1e6, 1e6)),
    st.data(),
)
@settings(max_examples=60, deadline=None)
def test_one_row_moves_the_vote_histogram_by_at_most_one(rows, extra, data):
    labels = np.array(data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows))))
    centres = unit_rows(np.random.default_rng(0).standard_normal((5, 4)))
    rows, more = unit_rows(rows), unit_rows(np.vstack([rows, extra[None]]))
    change = vote_histogram(
        more, np.append(labels, data.draw(st.integers(0, 2))), centres, 3
    ) - vote_histogram(rows, labels, centres, 3)
    assert np.linalg.norm(change) <= VOTES.sensitivity * (1 + 1e-12)


@pytest.fixture(scope="module")
def digits() -> dict:
    """Ten private digits a class, 600 public rows, 500 test rows, the public projection on 30 components."""
    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    order = np.random.default_rng(0).permutation(len(x))
    public, test, rest = order[:600], order[600:1100], order[1100:]
    private = np.concatenate([rest[y[rest] == c][:10] for c in range(10)])
    return {
        "private": (x[private], y[private]),
        "public": x[public],
        "test": (x[test], y[test]),
        "pca": PublicPCA(30).fit(x[public]),
    }


def fitted(
    digits: dict, method: str, epsilon: float, seed: int = 0, options: object = None
) -> DPLinearClassifier:
    return DPLinearClassifier(
        method=method,
        k=10,
        epsilon=epsilon,
        delta=1e-4,
        seed=seed,
        projection=digits["pca"],
        noise_seed=seed,
        n_public=True,
        method_options=options,
    ).fit(*digits["private"], public=digits["public"])


def head_rows(digits: dict, x: np.ndarray) -> np.ndarray:
    """Standardised, projected on the top 10 public components, unit norm."""
    return unit_rows(project(digits["pca"], x, 10))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_without_noise_and_refinement_prototypes_are_the_nearest_class_mean_by_cosine(digits):
    x, y = digits["private"]
    rows = head_rows(digits, x)
    means = unit_rows(np.stack([rows[y == c].sum(axis=0) for c in range(10)]))
    test = digits["test"][0]
    expected = (head_rows(digits, test) @ means.T).argmax(axis=1)
    model = fitted(digits, "dp-prototypes", float("inf"), options=PrototypeOptions(prototype_rounds=0))
    assert np.array_equal(model.predict(test), expected)


def test_refinement_moves_rough_prototypes_to_the_public_clusters():
    rng = np.random.default_rng(1)
    directions = unit_rows(rng.standard_normal((3, 6)))
    public = unit_rows(np.repeat(directions, 50, axis=0) + 0.05 * rng.standard_normal((150, 6)))
    rough = unit_rows(directions + 0.4 * rng.standard_normal((3, 6)))
    refined = refined_prototypes(rough, public, rounds=5)
    cluster_means = unit_rows(np.stack([public[i * 50 : (i + 1) * 50].sum(axis=0) for i in range(3)]))
    assert np.allclose(refined, cluster_means, atol=1e-9)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_without_noise_votes_label_public_rows_by_their_centres_majority_and_fit_a_student(digits):
    x, y = digits["private"]
    public = head_rows(digits, digits["public"])
    kmeans = KMeans(25, n_init=3, random_state=0).fit(public)
    votes = vote_histogram(head_rows(digits, x), y, kmeans.cluster_centers_, 10)
    labels = votes.argmax(axis=1)[kmeans.labels_]
    student = LogisticRegression(C=10.0, max_iter=500).fit(public, labels)
    test = digits["test"][0]
    model = fitted(digits, "public-votes", float("inf"), options=VoteOptions(vote_centres=25))
    assert np.mean(model.predict(test) == student.predict(head_rows(digits, test))) >= 0.998


def test_the_rule_sets_centres_from_the_released_count_and_the_noise():
    assert rule_centres(1000, 5.0, 10, 5000) == 50  # 1000 / (4 · 5)
    assert rule_centres(100, 5.0, 10, 5000) == 10  # at least one a class
    assert rule_centres(10**6, 5.0, 10, 400) == 80  # at most one per 5 public rows
    assert rule_centres(1000, 0.0, 10, 400) == 80  # without noise: as many as the public rows allow
    assert rule_centres(1000, 5.0, 10, 6) == 6  # fewer public rows than classes: one a row


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_at_ten_digits_a_class_and_epsilon_one_prototypes_beat_dp_sgd(digits):
    """Five noise draws each (seeded for the test): DP prototypes refined on public rows against the default
    DP-SGD path on the same 100 private rows."""
    test = digits["test"]
    prototypes = np.mean([fitted(digits, "dp-prototypes", 1.0, seed).score(*test) for seed in range(5)])
    dp_sgd = np.mean(
        [
            DPLinearClassifier(
                epsilon=1.0, delta=1e-4, seed=seed, projection=digits["pca"], noise_seed=seed, n_public=True
            )
            .fit(*digits["private"])
            .score(*test)
            for seed in range(5)
        ]
    )
    assert prototypes >= dp_sgd + 0.05, (prototypes, dp_sgd)


def test_options_refuse_negative_values():
    with pytest.raises(UsageError, match=r"prototype_rounds must be at least 0 \(got -1\)"):
        PrototypeOptions(prototype_rounds=-1)
    with pytest.raises(UsageError, match=r"vote_centres must be at least 0 \(got -2\)"):
        VoteOptions(vote_centres=-2)
