"""AdaDPS: its preconditioned clipped sum against a per-sample loop, the identity preconditioner against the
main engine, learning on real digits with public labels, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from pillar_cli import PublicPCA, UsageError, sweep
from pillar_cli.linear.engine import RunConfig, train_linear_heads
from pillar_cli.methods.adadps import (
    AdaDPSOptions,
    preconditioned_clipped_sum,
    preconditioned_person_sum,
    train_adadps,
)
from pillar_cli.privacy import dp_sgd_event, gaussian_segments, spent_epsilon
from pillar_cli.privacy.unit import Units
from pillar_cli.randomness import NoiseSource


def test_preconditioned_clipped_sum_equals_a_per_sample_loop():
    rng = np.random.default_rng(0)
    x, y = torch.as_tensor(rng.standard_normal((40, 6)) * 3), torch.as_tensor(rng.integers(0, 4, 40))
    weights, scale = (
        torch.as_tensor(rng.standard_normal((7, 4))),
        torch.as_tensor(rng.uniform(0.1, 20, (7, 4))),
    )
    expected = torch.zeros(7, 4, dtype=torch.float64)
    for row, label in zip(x, y):
        augmented = torch.cat([row, torch.ones(1, dtype=torch.float64)])
        residual = torch.softmax(augmented @ weights, dim=0)
        residual[label] -= 1.0
        gradient = scale * torch.outer(augmented, residual)
        expected += gradient * min(1.0, 0.5 / float(gradient.norm()))
    np.testing.assert_allclose(
        preconditioned_clipped_sum(x, y, weights, scale, 0.5), expected, rtol=1e-6, atol=1e-9
    )


def test_with_the_identity_preconditioner_it_is_the_engines_dp_sgd():
    """Same Poisson batches, same noise draws: the main engine's heads."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((500, 8)).astype(np.float32), rng.integers(0, 3, 500)
    config = RunConfig(0.5, 70, 64, 4)
    seeded = NoiseSource(2)  # one reproducible source for both (experiments only): the same draws
    ada = train_adadps(x, y, 3, config, 1.3, 1.0, lambda weights: torch.ones_like(weights), seeded)
    (engine,) = train_linear_heads(x, y, 3, [config], [1.3], 1.0, noise=seeded)
    np.testing.assert_allclose(ada.weights, engine.weights, atol=1e-5)
    np.testing.assert_allclose(ada.bias, engine.bias, atol=1e-5)
    assert ada.steps_run == engine.steps_run == 70


def test_per_person_the_preconditioned_sum_clips_rows_then_each_persons_sum():
    rng = np.random.default_rng(2)
    x, y = torch.as_tensor(rng.standard_normal((30, 5)) * 3), torch.as_tensor(rng.integers(0, 3, 30))
    weights, scale = (
        torch.as_tensor(rng.standard_normal((6, 3))),
        torch.as_tensor(rng.uniform(0.1, 20, (6, 3))),
    )
    person = torch.as_tensor(rng.integers(0, 7, 30))
    sums = torch.zeros(7, 6, 3, dtype=torch.float64)
    for row, label, owner in zip(x, y, person):
        augmented = torch.cat([row, torch.ones(1, dtype=torch.float64)])
        residual = torch.softmax(augmented @ weights, dim=0)
        residual[label] -= 1.0
        gradient = scale * torch.outer(augmented, residual)
        sums[owner] += gradient * min(1.0, 0.5 / float(gradient.norm()))
    expected = sum(total * min(1.0, 0.5 / float(total.norm())) for total in sums if total.norm() > 0)
    np.testing.assert_allclose(
        preconditioned_person_sum(x, y, weights, scale, 0.5, person, 7), expected, rtol=1e-6, atol=1e-9
    )
    for removed in range(7):  # one person, all their rows, moves the sum by at most C
        kept = person != removed
        change = preconditioned_person_sum(x, y, weights, scale, 0.5, person, 7) - preconditioned_person_sum(
            x[kept], y[kept], weights, scale, 0.5, person[kept], 7
        )
        assert float(change.norm()) <= 0.5 * (1 + 1e-9)


def test_per_person_with_the_identity_preconditioner_it_is_the_engines_person_dp_sgd():
    """Same persons drawn, same noise draws: the main engine's heads with the person as the unit."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((500, 8)).astype(np.float32), rng.integers(0, 3, 500)
    persons = Units.of(rng.integers(0, 90, 500), 500, "the test's persons")
    config = RunConfig(0.5, 70, 16, 4)
    seeded = NoiseSource(2)
    ada = train_adadps(
        x, y, 3, config, 1.3, 1.0, lambda weights: torch.ones_like(weights), seeded, units=persons
    )
    (engine,) = train_linear_heads(x, y, 3, [config], [1.3], 1.0, noise=seeded, units=persons)
    np.testing.assert_allclose(ada.weights, engine.weights, atol=1e-5)
    np.testing.assert_allclose(ada.bias, engine.bias, atol=1e-5)


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    public, labelled, private = order[:300], order[300:600], order[600:]
    return PublicPCA(30).fit(x[public]), (x[labelled], y[labelled]), x[private], y[private]


def test_adadps_learns_on_digits_and_spends_dp_sgds_epsilon(digits):
    pca, labelled, x, y = digits
    result = sweep(
        x,
        y,
        projection=pca,
        method=["adadps"],
        k=[None],
        epsilon=[2.0],
        delta=1e-4,
        lr=[0.5],
        steps=[200],
        batch_size=[200],
        public_labelled=labelled,
        device="cpu",
    )
    (run,) = result.runs
    accuracy = run.head.accuracy(pca.transform(x, None), y)
    ((sigma, rate, steps),) = gaussian_segments(run.released.event)
    count = result.count  # n is private: the rate reads the count released inside ε
    assert accuracy > 0.6 and run.epsilon_spent <= 2.0 and (rate, steps) == (200 / count.value, 200)
    assert run.epsilon_spent == spent_epsilon("prv", count.with_count(dp_sgd_event(sigma, rate, steps)), 1e-4)


def test_adadps_learns_per_person_on_digits(digits):
    """Persons of 4 rows: persons sampled at B over the count of persons, and a useful head still."""
    pca, labelled, x, y = digits
    result = sweep(
        x,
        y,
        projection=pca,
        method=["adadps"],
        k=[None],
        epsilon=[2.0],
        delta=1e-4,
        lr=[0.5],
        steps=[200],
        batch_size=[50],
        public_labelled=labelled,
        device="cpu",
        groups=np.arange(len(x)) // 4,
    )
    (run,) = result.runs
    ((_, rate, _),) = gaussian_segments(run.released.event)
    assert result.plan.unit.is_person and result.count.of == "persons" and rate == 50 / result.count.value
    assert run.head.accuracy(pca.transform(x, None), y) > 0.6 and run.epsilon_spent <= 2.0


def test_adadps_refusals(digits):
    pca, _labelled, x, y = digits
    with pytest.raises(
        UsageError, match=r"^method 'adadps' needs a labelled public split for its preconditioner$"
    ):
        sweep(x, y, projection=pca, method=["adadps"], k=[None], delta=1e-4)
    with pytest.raises(UsageError, match=r"^conditioner must be a positive number \(got 0.0\)$"):
        AdaDPSOptions(conditioner=0.0)
