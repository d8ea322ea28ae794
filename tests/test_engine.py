"""The fast linear DP-SGD engine against opacus and a direct per-sample computation; batching is exact."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pillar_cli.training.engine import RunConfig, clipped_gradient_sum, train_linear_heads
from pillar_cli.training.opacus_reference import opacus_clipped_gradient_sum


def _batch(n=64, d=20, classes=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=generator) * 2
    y = torch.randint(0, classes, (n,), generator=generator)
    w = torch.randn(d, classes, generator=generator) * 0.3
    b = torch.randn(classes, generator=generator) * 0.1
    return w, b, x, y


def _direct_clipped_sum(w, b, x, y, clip):
    """One backward pass per sample, clip, sum."""
    total_w, total_b = torch.zeros_like(w), torch.zeros_like(b)
    for xi, yi in zip(x, y):
        wi, bi = w.clone().requires_grad_(), b.clone().requires_grad_()
        torch.nn.functional.cross_entropy((xi @ wi + bi)[None], yi[None]).backward()
        norm = torch.sqrt(wi.grad.pow(2).sum() + bi.grad.pow(2).sum())
        factor = min(1.0, clip / norm.item())
        total_w += factor * wi.grad
        total_b += factor * bi.grad
    return total_w, total_b


@pytest.mark.parametrize("clip", [0.1, 1.0, 100.0])
def test_fast_clipped_sum_equals_direct_per_sample_and_opacus(clip):
    w, b, x, y = _batch()
    fast_w, fast_b = clipped_gradient_sum(w, b, x, y, clip)
    direct_w, direct_b = _direct_clipped_sum(w, b, x, y, clip)
    opacus_w, opacus_b = opacus_clipped_gradient_sum(w, b, x, y, clip)
    for fast, reference in ((fast_w, direct_w), (fast_b, direct_b), (fast_w, opacus_w), (fast_b, opacus_b)):
        scale = reference.abs().max().item()
        assert (fast - reference).abs().max().item() <= 1e-5 * scale


def test_opacus_path_equals_direct_per_sample_computation():
    w, b, x, y = _batch(seed=1)
    opacus_w, opacus_b = opacus_clipped_gradient_sum(w, b, x, y, 0.5)
    direct_w, direct_b = _direct_clipped_sum(w, b, x, y, 0.5)
    torch.testing.assert_close(opacus_w, direct_w, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(opacus_b, direct_b, rtol=1e-5, atol=1e-6)


def test_every_clipped_per_sample_gradient_respects_the_bound():
    w, b, x, y = _batch(n=1, seed=2)
    for i in range(32):
        w, b, x, y = _batch(n=1, seed=i)
        gw, gb = clipped_gradient_sum(w, b, x, y, 0.7)
        assert torch.sqrt(gw.pow(2).sum() + gb.pow(2).sum()).item() <= 0.7 + 1e-5


def test_batched_configurations_equal_one_at_a_time():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((300, 8)).astype(np.float32), rng.integers(0, 3, 300)
    configs = [RunConfig(0.5, 30, 40, 1), RunConfig(0.1, 50, 100, 2), RunConfig(1.0, 10, 20, 3),
               RunConfig(0.2, 70, 40, 1), RunConfig(0.3, 37, 40, 1, momentum=0.9, weight_decay=0.01)]
    sigmas = [2.0, 0.7, 0.0, 1.5, 3.0]  # configurations 0, 3 and 4 share a seed and a batch size: common streams
    together = train_linear_heads(x, y, 3, configs, sigmas, clip=1.0)
    for config, sigma, head in zip(configs, sigmas, together):
        alone = train_linear_heads(x, y, 3, [config], [sigma], clip=1.0)[0]
        np.testing.assert_allclose(head.weights, alone.weights, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(head.bias, alone.bias, rtol=1e-5, atol=1e-6)


def test_non_private_training_learns_a_separable_problem():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((400, 5)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    head = train_linear_heads(x, y, 2, [RunConfig(1.0, 300, 100, 0)], [0.0], clip=None)[0]
    assert head.accuracy(x, y) > 0.97
