"""The reference path: opacus' GradSampleModule (per-sample gradients via hooks) and DPOptimizer.

Slow by design (it materialises one gradient per sample); it exists to check the fast engine against and as
`train-private --engine opacus`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from pillar_cli.lazy import torch
from pillar_cli.linear.engine import SAMPLING_CHUNK_STEPS, LinearHead, RunConfig
from pillar_cli.linear.sampling import PoissonSampler
from pillar_cli.privacy.count import RowCount
from pillar_cli.randomness import SECRET, NoiseSource


def opacus_clipped_gradient_sum(
    weights: torch.Tensor, bias: torch.Tensor, features: torch.Tensor, labels: torch.Tensor, clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_i clip(∇ CE(x_i, y_i)) for a linear head (d, C) + (C,), computed by opacus."""
    from opacus import GradSampleModule

    linear = torch.nn.Linear(weights.shape[0], weights.shape[1])
    with torch.no_grad():
        linear.weight.copy_(weights.T)
        linear.bias.copy_(bias)
    module = GradSampleModule(linear, loss_reduction="sum")
    loss = torch.nn.functional.cross_entropy(module(features), labels, reduction="sum")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no inputs require gradients": expected for features
        loss.backward()
    per_sample_w, per_sample_b = linear.weight.grad_sample, linear.bias.grad_sample
    norms = torch.sqrt(per_sample_w.flatten(1).pow(2).sum(1) + per_sample_b.pow(2).sum(1))
    factors = torch.clamp(clip / (norms + 1e-6), max=1.0)
    return torch.einsum("i,icd->dc", factors, per_sample_w), factors @ per_sample_b


def train_with_opacus(
    features: np.ndarray,
    labels: np.ndarray,
    num_classes: int,
    config: RunConfig,
    sigma: float,
    clip: float | None,
    init: tuple[np.ndarray, np.ndarray] | None = None,
    noise: NoiseSource = SECRET,
    count: RowCount | None = None,
    on_steps: Callable[[int], None] = lambda n: None,
) -> LinearHead:
    """One run through opacus (GradSampleModule + DPOptimizer) on the fast engine's Poisson batches;
    `on_steps(1)` hears of each step.

    Batches and opacus' noise generator come from `noise` under the fast engine's labels, so with a seeded
    source and σ = 0 both engines follow the same trajectory; opacus draws its noise its own way. `count`: the
    n that the sampling rate and the expected batch read, as in the fast engine (None: the exact number of
    rows).
    """
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    x = torch.as_tensor(features, dtype=torch.float32)
    y = torch.as_tensor(labels, dtype=torch.int64)
    linear = torch.nn.Linear(x.shape[1], num_classes)
    with torch.no_grad():
        linear.weight.copy_(
            torch.as_tensor(init[0]).T if init is not None else torch.zeros_like(linear.weight)
        )
        linear.bias.copy_(torch.as_tensor(init[1]) if init is not None else torch.zeros_like(linear.bias))
    sgd = torch.optim.SGD(
        [
            {"params": [linear.weight], "weight_decay": config.weight_decay},  # bias: no decay
            {"params": [linear.bias], "weight_decay": 0.0},
        ],
        lr=config.lr,
        momentum=config.momentum,
    )
    private, count = clip is not None, count or RowCount.exact(len(x))
    expected = count.expected_batch(config.batch_size)
    model = GradSampleModule(linear) if private else linear
    optimizer = (
        DPOptimizer(
            sgd,
            noise_multiplier=sigma,
            max_grad_norm=clip,
            expected_batch_size=expected,
            generator=noise.child(*config.noise_label).torch(),
        )
        if private
        else sgd
    )
    sampler = PoissonSampler(
        len(x), count.sample_rate(config.batch_size), noise.child(*config.batches_label).torch()
    )
    average = [linear.weight.detach().clone(), linear.bias.detach().clone()]
    for start in range(0, config.steps, SAMPLING_CHUNK_STEPS):
        for index in sampler.batches(min(SAMPLING_CHUNK_STEPS, config.steps - start)):
            rows = index[index < len(x)]
            loss = torch.nn.functional.cross_entropy(model(x[rows]), y[rows], reduction="sum") / expected
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            for mean, parameter in zip(average, (linear.weight, linear.bias)):
                mean.mul_(config.ema).add_(parameter.detach(), alpha=1 - config.ema)
            on_steps(1)
    return LinearHead(average[0].T.numpy().copy(), average[1].numpy().copy())
