"""GEP's anchor subspace from the public rows' Gram matrix equals the top-k right singular subspace of the
materialised per-sample gradient matrix (what the method is defined by); with the person as the unit, each
person's clipped sums are clipped again, and persons of one row train as rows."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.datasets import load_digits

from pillar_cli import PublicPCA, sweep
from pillar_cli.linear.engine import RunConfig
from pillar_cli.linear.gradients import per_sample_gradients
from pillar_cli.methods.gep import GepSettings, _anchor, _augmented, _clipped, train_gep
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.unit import Units
from pillar_cli.randomness import NoiseSource


def test_anchor_from_the_gram_matrix_is_the_svd_subspace():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(300, 50, generator=generator)
    weights, bias = 0.1 * torch.randn(50, 4, generator=generator), 0.1 * torch.randn(4, generator=generator)
    anchor = _anchor(x, _augmented(x) @ _augmented(x).T, weights, bias, 12, torch.Generator().manual_seed(7))
    probabilities = torch.softmax(x @ weights + bias, dim=-1)  # the same pseudo-labels: same generator seed
    labels = torch.multinomial(probabilities, 1, generator=torch.Generator().manual_seed(7)).squeeze(1)
    gradients = per_sample_gradients(x.double(), labels, weights.double(), bias.double())
    singular = torch.linalg.svd(gradients, full_matrices=False).Vh[:12].T
    assert anchor.shape == (51 * 4, 12)
    assert torch.allclose(anchor.double().T @ anchor.double(), torch.eye(12, dtype=torch.float64), atol=1e-5)
    difference = anchor.double() @ anchor.double().T - singular @ singular.T
    assert torch.linalg.matrix_norm(difference, ord=2) < 1e-5


def test_per_person_each_persons_clipped_sum_is_clipped_again_and_one_person_moves_it_by_at_most_the_bound():
    generator = torch.Generator().manual_seed(1)
    vectors = 3 * torch.randn(40, 9, generator=generator, dtype=torch.float64)
    person = np.random.default_rng(1).integers(0, 8, 40)
    clipped = _clipped(vectors, 0.5, person, 8)
    for p in range(8):
        rows = vectors[torch.from_numpy(person == p)]
        total = (rows * torch.clamp(0.5 / rows.norm(dim=1), max=1.0)[:, None]).sum(0)
        np.testing.assert_allclose(
            clipped[p], total * min(1.0, 0.5 / max(float(total.norm()), 1e-12)), atol=1e-12
        )
        kept = person != p
        change = clipped.sum(0) - _clipped(vectors[torch.from_numpy(kept)], 0.5, person[kept], 8).sum(0)
        assert float(change.norm()) <= 0.5 * (1 + 1e-9)


def test_per_person_with_persons_of_one_row_it_is_gep_per_row():
    """Same experiment-only noise: persons of one row draw the same batches and noise as rows, and clipping a
    person's single clipped row again changes nothing."""
    rng = np.random.default_rng(2)
    x, y, public = rng.standard_normal((400, 6)), rng.integers(0, 3, 400), rng.standard_normal((200, 6))
    config, settings = RunConfig(0.5, 40, 64, 3), GepSettings(anchor_dim=5)
    heads = [
        train_gep(x, y, public, 3, config, 1.1, settings, NoiseSource(4), RowCount.exact(400), persons)
        for persons in (Units.rows(400), Units.of(np.arange(400), 400, "persons of one row"))
    ]
    np.testing.assert_allclose(heads[0].weights, heads[1].weights, atol=1e-5)


def test_gep_trains_per_person_in_a_sweep():
    x, y = load_digits(return_X_y=True)
    pca = PublicPCA(20).fit(x[:300])
    result = sweep(
        x[300:],
        y[300:],
        projection=pca,
        public=x[:300],
        method=["gep"],
        k=[8],
        epsilon=[2.0],
        delta=1e-4,
        lr=[0.5],
        steps=[100],
        batch_size=[50],
        device="cpu",
        groups=np.arange(len(x) - 300) // 4,
    )
    (run,) = result.runs
    assert result.plan.unit.is_person and run.epsilon_spent <= 2.0
    assert run.head.accuracy(pca.transform(x[300:].astype(np.float32), None), y[300:]) > 0.5
