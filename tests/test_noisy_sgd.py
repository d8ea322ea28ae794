"""--method noisy-sgd: the theory variant (boosted projected noisy SGD on a ζ-hinge loss) and its ledger."""

from __future__ import annotations

import json
import math

import numpy as np

from pillar_cli import artifacts
from pillar_cli.methods.noisy_sgd import PoissonSamples, _advance
from pillar_cli.privacy import get_accountant


def test_noisy_sgd_on_few_public_components_beats_many_and_its_ledger_adds_up(pillar, tmp_path):
    """Example-1 mixture in d = 200: with k = 2 public components noisy SGD learns, with k = 150 the noise wins."""
    emb, pca, model = tmp_path / "gmm.h5", tmp_path / "pca.h5", tmp_path / "model.h5"
    pillar("embed", "--source", "synthetic-gmm", "--param", "n=3000", "--param", "d=200", "--param", "theta=9",
           "--param", "sigma=0.5", "--param", "mu_norm=1", "--public-fraction", "0.3", "-o", emb)
    pillar("fit-pca", f"{emb}:public", "--k-max", "150", "-o", pca)
    trained = pillar("train-private", emb, "-p", pca, "--method", "noisy-sgd", "--k", "2,150", "--eps", "0.5",
                     "--seed", "0,1", "--steps", "3000", "--accountant", "rdp", "-o", model)
    assert trained.stderr == "warning: noisy-sgd runs --steps 3000 instead of Algorithm 1's n² = 2,073,600 steps\n"
    report = json.loads(pillar("evaluate", model, "-e", f"{emb}:test", "-o", tmp_path / "ev.h5", "--json").stdout)
    accuracy = {row["k"]: row["accuracy_mean"] for row in report["rows"]}
    assert accuracy[2] > 0.9 and accuracy[2] > accuracy[150] + 0.15

    stored = artifacts.read(model, "model")
    ledger = stored.attrs["noisy_sgd"]
    assert ledger["boosted_runs"] == math.ceil(math.log(1 / 0.05)) == 3 and ledger["zeta"] == 0.1
    runs = {name.removeprefix("runs/"): array for name, array in stored.arrays.items() if name.count("/") == 1}
    for z, q, steps, spent in zip(runs["noise_multiplier"], runs["sample_rate"], runs["steps"], runs["epsilon_spent"]):
        per_run = get_accountant("rdp").epsilon(float(z), float(q), int(steps), 1e-5 / 3)
        assert q == 1 / 1440 and steps == 3000  # n = 1,440 private rows
        assert spent == np.float64(3 * per_run + 0.25) and 0.99 * 0.5 <= spent <= 0.5


def test_noisy_sgd_is_for_binary_tasks(pillar, mnist, tmp_path):
    result = pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--method", "noisy-sgd", "--k", "5",
                    "--eps", "1", "--steps", "10", "-o", tmp_path / "m.h5", expect=2)
    assert result.stderr.splitlines()[-1] == ("error: method 'noisy-sgd' is the theory variant for binary tasks; "
                                              "these labels have 10 classes")
    assert not (tmp_path / "m.h5").exists()


def test_noisy_sgd_steps_equal_a_per_step_loop_over_the_same_samples_and_noise():
    """The chunked, padded update against Algorithm 1's step written out per run and per sampled row."""
    rng = np.random.default_rng(0)
    n, dim, runs, steps, zeta = 40, 3, 3, 300, 0.2
    x = rng.standard_normal((n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.where(x[:, 0] > 0, 1.0, -1.0)  # separable: margins pass ζ, so rows leave the hinge as w learns
    samples = PoissonSamples(n, steps, runs, rng)
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
    assert outside_hinge > 50 and np.bincount(samples.slot).size >= 3  # both sides of the hinge, several rows a step
    np.testing.assert_allclose(weights, expected, rtol=1e-12, atol=1e-12)


def test_poisson_samples_are_distinct_rows_per_step_and_run_at_rate_one_over_n():
    rng = np.random.default_rng(1)
    dense = PoissonSamples(3, 2000, 3, rng)  # n = 3: counts up to 3, so collisions (and redraws) are common
    for group in np.unique(dense.group):
        rows = dense.rows[dense.group == group]
        assert len(np.unique(rows)) == len(rows) and rows.min() >= 0 and rows.max() < 3
    sparse = PoissonSamples(1000, 3000, 3, rng)
    assert abs(len(sparse.rows) / (3000 * 3) - 1.0) < 0.05  # expected count n · 1/n = 1 (sd of the mean 0.011)
    padded = sparse.padded(np.arange(1000.0)[:, None] + 1)  # row r → r + 1, so a zero marks an empty slot
    assert padded.shape[:2] == (3000, 3) and np.array_equal(np.sort(padded[padded > 0]) - 1,
                                                            np.sort(sparse.rows.astype(float)))
