"""Exact DP-SGD for linear softmax heads, many configurations at once.

For softmax cross-entropy the per-sample gradient of (W, b) is [x_i, 1] ⊗ (p_i − e_{y_i}); its norm is
sqrt(‖x_i‖² + 1)·‖p_i − e_{y_i}‖. Clipping therefore needs no per-sample gradient tensors: scale each
residual by min(1, C / norm_i) and form the clipped sum with one matmul. Each configuration has its own
generator, so its Poisson batches and its noise are the same whether it trains alone or in a batch of
configurations. Updates divide by the expected batch size q·n (the unbiased DP-SGD estimate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

NON_PRIVATE = 0.0


@dataclass(frozen=True)
class RunConfig:
    lr: float
    steps: int
    batch_size: int
    seed: int


@dataclass(frozen=True)
class LinearHead:
    weights: np.ndarray  # (d, C)
    bias: np.ndarray  # (C,)

    def logits(self, features: np.ndarray) -> np.ndarray:
        return features @ self.weights + self.bias

    def accuracy(self, features: np.ndarray, labels: np.ndarray) -> float:
        return float((self.logits(features).argmax(axis=1) == labels).mean())


def clip_factors(features: torch.Tensor, residuals: torch.Tensor, clip: float | None) -> torch.Tensor:
    """min(1, C / ‖per-sample gradient‖) from ‖[x, 1]‖·‖p − e_y‖; ones when clipping is off."""
    if clip is None:
        return torch.ones(residuals.shape[:-1], dtype=residuals.dtype, device=residuals.device)
    norms = torch.sqrt((features * features).sum(-1) + 1.0) * residuals.norm(dim=-1)
    return torch.clamp(clip / norms.clamp_min(1e-12), max=1.0)


def clipped_gradient_sum(weights: torch.Tensor, bias: torch.Tensor, features: torch.Tensor, labels: torch.Tensor,
                         clip: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_i clip(∇_(W,b) CE(x_i, y_i)) for one batch: (d, C) and (C,)."""
    residuals = torch.softmax(features @ weights + bias, dim=-1)
    residuals[torch.arange(len(labels)), labels] -= 1.0
    scaled = residuals * clip_factors(features, residuals, clip)[:, None]
    return features.T @ scaled, scaled.sum(0)


def train_linear_heads(features: np.ndarray, labels: np.ndarray, num_classes: int, configs: list[RunConfig],
                       noise_multipliers: list[float], clip: float | None, *, device: str = "cpu",
                       on_step: Callable[[int], None] = lambda t: None) -> list[LinearHead]:
    """Train one linear head per configuration with Poisson-sampled, clipped, noised SGD (σ = 0: no noise)."""
    dev = torch.device(device)
    x = torch.as_tensor(features, dtype=torch.float32, device=dev)
    y = torch.as_tensor(labels, dtype=torch.int64, device=dev)
    n, dim, groups = len(x), x.shape[1], len(configs)
    weights = torch.zeros(groups, dim, num_classes, device=dev)
    bias = torch.zeros(groups, num_classes, device=dev)
    generators = [torch.Generator(device=dev).manual_seed(c.seed) for c in configs]
    rates = [c.batch_size / n for c in configs]
    lr_over_batch = torch.tensor([c.lr / (c.batch_size) for c in configs], device=dev)
    sigma_clip = [s * (clip or 1.0) for s in noise_multipliers]
    steps = np.array([c.steps for c in configs])
    for t in range(int(steps.max())):
        active = np.flatnonzero(steps > t)
        batches = [torch.nonzero(torch.rand(n, generator=generators[g], device=dev) < rates[g]).squeeze(1)
                   for g in active]
        grad_w, grad_b = _batched_clipped_sums(weights[active], bias[active], x, y, batches, clip)
        for row, g in enumerate(active):
            if sigma_clip[g] > 0:
                grad_w[row] += sigma_clip[g] * torch.randn(dim, num_classes, generator=generators[g], device=dev)
                grad_b[row] += sigma_clip[g] * torch.randn(num_classes, generator=generators[g], device=dev)
        index = torch.as_tensor(active, device=dev)
        step = lr_over_batch[index]
        weights[index] -= step[:, None, None] * grad_w
        bias[index] -= step[:, None] * grad_b
        on_step(t + 1)
    return [LinearHead(weights[g].cpu().numpy(), bias[g].cpu().numpy()) for g in range(groups)]


def _batched_clipped_sums(weights: torch.Tensor, bias: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                          batches: list[torch.Tensor], clip: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Clipped gradient sums for G configurations at once; batches are padded and masked."""
    longest = max((len(b) for b in batches), default=0)
    index = torch.zeros(len(batches), longest, dtype=torch.int64, device=x.device)
    valid = torch.zeros(len(batches), longest, dtype=x.dtype, device=x.device)
    for row, batch in enumerate(batches):
        index[row, :len(batch)] = batch
        valid[row, :len(batch)] = 1.0
    xb, yb = x[index], y[index]
    residuals = torch.softmax(torch.bmm(xb, weights) + bias[:, None, :], dim=-1)
    residuals.scatter_add_(2, yb[..., None], -torch.ones_like(yb[..., None], dtype=x.dtype))
    scaled = residuals * (clip_factors(xb, residuals, clip) * valid)[..., None]
    return torch.bmm(xb.transpose(1, 2), scaled), scaled.sum(1)
