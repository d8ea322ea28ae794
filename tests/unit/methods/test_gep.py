"""GEP's anchor subspace from the public rows' Gram matrix equals the top-k right singular subspace of the
materialised per-sample gradient matrix (what the method is defined by)."""

from __future__ import annotations

import torch

from pillar_cli.linear.gradients import per_sample_gradients
from pillar_cli.methods.gep import _anchor, _augmented


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
