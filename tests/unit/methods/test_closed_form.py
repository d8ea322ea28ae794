"""The closed-form heads: released statistics within their stated sensitivity, the release's ε against
dp-accounting, and without noise the solutions scikit-learn and a direct discriminant give."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event, pld
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.linear_model import Ridge

from pillar_cli import DataError, UsageError, sweep
from pillar_cli.methods.closed_form import (
    DP_LS,
    PUBLIC_LDA,
    class_sums,
    discriminant,
    least_squares_statistics,
)
from pillar_cli.privacy import GaussianEvent, calibrate_noise
from pillar_cli.privacy.accountants import computed_epsilon


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


rows_strategy = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 12), st.just(4)),
    elements=st.floats(-1e12, 1e12, allow_nan=False) | st.just(0.0),
)


@given(rows_strategy, st.data())
@settings(max_examples=60, deadline=None)
def test_one_row_moves_each_release_by_at_most_its_sensitivity(rows, data):
    """Any rows (huge norms, zeros, all in one class): adding a row changes the released vector by ≤
    sensitivity."""
    labels = np.array(data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows))))
    extra = data.draw(hnp.arrays(np.float64, 4, elements=st.floats(-1e12, 1e12, allow_nan=False)))
    label = data.draw(st.integers(0, 2))
    rows, more = unit(rows), unit(np.vstack([rows, extra[None]]))
    labels_more = np.append(labels, label)
    change = class_sums(more, labels_more, 3) - class_sums(rows, labels, 3)
    assert np.linalg.norm(change) <= PUBLIC_LDA.sensitivity * (1 + 1e-9)
    (gram_a, cross_a), (gram_b, cross_b) = (
        least_squares_statistics(rows, labels, 3),
        least_squares_statistics(more, labels_more, 3),
    )
    released = np.concatenate([np.triu(gram_b - gram_a)[np.triu_indices(5)], (cross_b - cross_a).ravel()])
    assert np.linalg.norm(released) <= DP_LS.sensitivity * (1 + 1e-9)


def test_a_single_release_spends_what_dp_accounting_says():
    sigma = calibrate_noise("pld", 0.1, 1e-5, 1.0, 1)
    accountant = pld.PLDAccountant(value_discretization_interval=1e-5)
    accountant.compose(dp_event.GaussianDpEvent(sigma))
    reference = accountant.get_epsilon(1e-5)
    event = GaussianEvent(sigma)
    assert computed_epsilon("pld", event, 1e-5) == pytest.approx(reference, rel=2e-3)
    assert computed_epsilon("prv", event, 1e-5) == pytest.approx(reference, rel=1e-2)  # PRV's own error


def ledoit_wolf_by_hand(rows: np.ndarray) -> np.ndarray:
    """Ledoit & Wolf (2004): S shrunk towards m·I by b²/d², with m = tr S/p, d² = ‖S − mI‖²/p and b² the
    (capped) mean squared distance of the rows' outer products from S, over n²."""
    centred = rows - rows.mean(axis=0)
    n, p = centred.shape
    sample = centred.T @ centred / n
    m = np.trace(sample) / p
    d2 = np.sum((sample - m * np.eye(p)) ** 2) / p
    b2 = min(sum(np.sum((np.outer(r, r) - sample) ** 2) for r in centred) / n**2 / p, d2)
    return b2 / d2 * m * np.eye(p) + (1 - b2 / d2) * sample


def test_without_noise_dp_ls_is_ridge_and_public_lda_a_direct_discriminant(digits):
    pca, public, x, y = digits
    k, ridge = 12, 3.0
    rows, public_rows = unit(pca.transform(x, k)), unit(pca.transform(public, k))
    result = sweep(
        x,
        y,
        projection=pca,
        public=public,
        method=["dp-ls", "public-lda"],
        k=[k],
        epsilon=[math.inf],
        ridge=[ridge],
        device="cpu",
    )
    heads = {run.key.method: run.head for run in result.runs}
    augmented = np.hstack([rows, np.ones((len(rows), 1))]) / math.sqrt(2.0)
    reference = Ridge(alpha=ridge, fit_intercept=False).fit(augmented, np.eye(10)[y]).coef_.T / math.sqrt(2.0)
    np.testing.assert_allclose(heads["dp-ls"].weights, reference[:-1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(heads["dp-ls"].bias, reference[-1], rtol=1e-4, atol=1e-5)
    means = np.stack([rows[y == c].sum(axis=0) for c in range(10)]) / (len(rows) / 10)
    covariance = ledoit_wolf_by_hand(public_rows) + ridge * np.eye(k)
    direct = np.linalg.inv(covariance) @ means.T
    np.testing.assert_allclose(heads["public-lda"].weights, direct, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        heads["public-lda"].bias, -0.5 * np.einsum("ck,kc->c", means, direct), rtol=1e-4
    )
    assert discriminant(means, covariance).weights.shape == (k, 10)


def test_closed_form_inputs_that_cannot_work_are_refused(digits):
    pca, public, x, y = digits
    with pytest.raises(UsageError, match=r"^ridge must be a positive number \(got 0.0\)$"):
        sweep(
            x,
            y,
            projection=pca,
            public=public,
            method=["dp-ls"],
            k=[5],
            epsilon=[1.0],
            delta=1e-4,
            ridge=[0.0],
        )
    with pytest.raises(DataError, match=r"^10 public rows cannot estimate a 20-dimensional covariance$"):
        sweep(
            x, y, projection=pca, public=public[:10], method=["public-lda"], k=[20], epsilon=[1.0], delta=1e-4
        )
