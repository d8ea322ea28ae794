"""The reference path: per-sample gradients from opacus' GradSampleModule (hooks), clipped and summed.

Slow by design (it materialises one gradient per sample); it exists to check the fast engine against.
"""

from __future__ import annotations

import warnings

import torch


def opacus_clipped_gradient_sum(weights: torch.Tensor, bias: torch.Tensor, features: torch.Tensor,
                                labels: torch.Tensor, clip: float) -> tuple[torch.Tensor, torch.Tensor]:
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
