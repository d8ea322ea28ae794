"""The theory variant's noisy SGD: its chunked steps equal a per-step loop; its Poisson samples."""

from __future__ import annotations

import numpy as np

from pillar_cli.methods.noisy_sgd import PoissonSamples, _advance


def test_noisy_sgd_steps_equal_a_per_step_loop_over_the_same_samples_and_noise():
    """The chunked, padded update against Algorithm 1's step written out per run and per sampled row."""
    rng = np.random.default_rng(0)
    n, dim, runs, steps, zeta = 40, 3, 3, 300, 0.2
    x = rng.standard_normal((n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.where(x[:, 0] > 0, 1.0, -1.0)  # separable: margins pass ζ, so rows leave the hinge as w learns
    samples = PoissonSamples(n, 1 / n, steps, runs, rng)
    noise = 0.05 * n * rng.standard_normal((steps, runs, dim))
    rates = 1.0 / np.sqrt(np.arange(1, steps + 1) * (n * n / zeta**2 + dim))

    weights = np.zeros((runs, dim))
    _advance(weights, samples.padded(y[:, None] * x), noise.copy(), rates, n / zeta, zeta)

    expected, outside_hinge = np.zeros((runs, dim)), 0
    for t in range(steps):
        for run in range(runs):
            gradient = np.zeros(dim)
            for i in samples.rows[samples.group == t * runs + run]:
                if y[i] * (x[i] @ expected[run]) < zeta:
                    gradient -= y[i] * x[i] / zeta
                else:
                    outside_hinge += 1
            w = expected[run] - rates[t] * (n * gradient + noise[t, run])
            expected[run] = w / max(1.0, np.linalg.norm(w))
    assert (
        outside_hinge > 50 and np.bincount(samples.slot).size >= 3
    )  # both sides of the hinge, several rows a step
    np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-12)


def test_poisson_samples_are_distinct_rows_per_step_and_run_at_rate_one_over_n():
    rng = np.random.default_rng(1)
    # n = 3: counts up to 3, so collisions (and redraws) are common
    dense = PoissonSamples(3, 1 / 3, 2000, 3, rng)
    for group in np.unique(dense.group):
        rows = dense.rows[dense.group == group]
        assert len(np.unique(rows)) == len(rows) and rows.min() >= 0 and rows.max() < 3
    sparse = PoissonSamples(1000, 1 / 1000, 3000, 3, rng)
    assert (
        abs(len(sparse.rows) / (3000 * 3) - 1.0) < 0.05
    )  # expected count n · 1/n = 1 (sd of the mean 0.011)
    padded = sparse.padded(np.arange(1000.0)[:, None] + 1)  # row r → r + 1, so a zero marks an empty slot
    assert padded.shape[:2] == (3000, 3) and np.array_equal(
        np.sort(padded[padded > 0]) - 1, np.sort(sparse.rows.astype(float))
    )
