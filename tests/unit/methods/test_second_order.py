"""The second-order heads (dp-newton, dp-fc, public-fc): without noise the exact Newton and covariance-
preconditioned steps of a direct formula; each release within its stated sensitivity; the run's ε against
dp-accounting for its full-batch Gaussian releases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event, rdp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pillar_cli import UsageError, sweep
from pillar_cli.methods.second_order import (
    DP_FC,
    DP_NEWTON,
    GRADIENT_SENSITIVITY,
    GRAM_SENSITIVITY,
    HESSIAN_SENSITIVITY,
    augmented,
    gradient_sum,
    probabilities,
)
from pillar_cli.privacy import gaussian_segments


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def _heads(digits, steps: int, methods: list[str]) -> dict:
    pca, public, x, y = digits
    result = sweep(
        x,
        y,
        projection=pca,
        public=public,
        method=methods,
        k=[12],
        epsilon=[math.inf],
        steps=[steps],
        ridge=[2.0],
        device="cpu",
    )
    return {run.key.method: run.head for run in result.runs}


def _rows(digits):
    pca, _public, x, y = digits
    return augmented(unit(pca.transform(x, 12))), np.eye(10)[y]


def _as_unit_head(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return weights[:-1] / math.sqrt(2.0), weights[-1] / math.sqrt(2.0)


def test_without_noise_two_steps_are_the_direct_newton_and_preconditioned_steps(digits):
    a, onehot = _rows(digits)
    ridge, eye = 2.0, np.eye(a.shape[1])
    gram = a.T @ a
    fc = np.zeros((a.shape[1], 10))
    newton = np.zeros((a.shape[1], 10))
    for _ in range(2):
        fc = fc - 2.0 * np.linalg.solve(gram + ridge * eye, a.T @ (probabilities(a, fc) - onehot))
        p = probabilities(a, newton)
        gradient = a.T @ (p - onehot)
        newton = newton - np.stack(
            [
                np.linalg.solve((a * (p[:, c] * (1 - p[:, c]))[:, None]).T @ a + ridge * eye, gradient[:, c])
                for c in range(10)
            ],
            axis=1,
        )
    heads = _heads(digits, 2, ["dp-fc", "dp-newton", "public-fc"])
    for name, weights in (("dp-fc", fc), ("dp-newton", newton)):
        expected_w, expected_b = _as_unit_head(weights)
        np.testing.assert_allclose(heads[name].weights, expected_w, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(heads[name].bias, expected_b, rtol=1e-4, atol=1e-5)
    pca, public, x, _ = digits
    public_a = augmented(unit(pca.transform(public, 12)))
    scaled = public_a.T @ public_a * (len(x) / len(public_a))  # ε = inf: the count is the exact n
    step = -2.0 * np.linalg.solve(scaled + ridge * eye, a.T @ (probabilities(a, np.zeros((13, 10))) - onehot))
    step = step - 2.0 * np.linalg.solve(scaled + ridge * eye, a.T @ (probabilities(a, step) - onehot))
    np.testing.assert_allclose(heads["public-fc"].weights, _as_unit_head(step)[0], rtol=1e-4, atol=1e-5)


@given(
    hnp.arrays(np.float64, 4, elements=st.floats(-1e12, 1e12, allow_nan=False)),
    hnp.arrays(np.float64, (5, 3), elements=st.floats(-50, 50)),
    st.integers(0, 2),
)
@settings(max_examples=100, deadline=None)
def test_one_row_moves_each_release_by_at_most_its_sensitivity(features, weights, label):
    """Every release is a sum over rows, so adding one row moves it by that row's term: for any features
    (huge, zero) and any current weights, the gradient term, the Gram matrix's upper triangle and the stacked
    per-class Hessians' upper triangles stay within the stated sensitivities."""
    one = augmented(unit(features[None]))
    assert np.linalg.norm(gradient_sum(one, np.eye(3)[[label]], weights)) <= GRADIENT_SENSITIVITY * (1 + 1e-9)
    assert np.linalg.norm(np.triu(one.T @ one)) <= GRAM_SENSITIVITY * (1 + 1e-9)
    p = probabilities(one, weights)[0]
    hessians = [np.triu(p[c] * (1 - p[c]) * one.T @ one) for c in range(3)]
    assert np.linalg.norm(np.stack(hessians)) <= HESSIAN_SENSITIVITY * (1 + 1e-9)


def test_a_run_spends_what_dp_accounting_says_for_its_releases(digits):
    pca, public, x, y = digits
    result = sweep(
        x,
        y,
        projection=pca,
        public=public,
        method=["dp-fc", "dp-newton"],
        k=[12],
        epsilon=[1.0],
        steps=[3],
        delta=1e-5,
        accountant="rdp",
        n_public=True,
        device="cpu",
    )
    for run in result.runs:
        releases = DP_FC.releases(3) if run.key.method == "dp-fc" else DP_NEWTON.releases(3)
        ((sigma, rate, steps),) = gaussian_segments(run.released.event)
        assert (rate, steps) == (1.0, releases)  # full batches: one Gaussian release each
        accountant = rdp.RdpAccountant()
        accountant.compose(dp_event.GaussianDpEvent(sigma), releases)
        assert run.epsilon_spent == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-6)
        assert run.epsilon_spent <= 1.0 * (1 + 1e-9) and run.key.steps == 3


def test_second_order_inputs_that_cannot_work_are_refused(digits):
    pca, public, x, y = digits
    with pytest.raises(UsageError, match=r"^ridge must be a positive number \(got -1.0\)$"):
        sweep(x, y, projection=pca, public=public, method=["dp-fc"], k=[5], epsilon=[1.0], ridge=[-1.0])
