"""The softmax head's per-sample gradients in closed form: vec([x_i, 1] ⊗ (softmax(x_i W + b) − e_{y_i})).

Shared by GEP's anchor subspace and GSD's linear probe; DP-SGD never materialises them (engine.py).
"""

from __future__ import annotations

from pillar_cli.lazy import torch


def per_sample_gradients(
    x: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    """(n, (d+1)·C) materialised per-sample gradients vec([x_i, 1] ⊗ (softmax(x_i W + b) − e_{y_i})), in x's
    dtype.

    For consumers that need the vectors themselves (GEP's anchor, GSD); DP-SGD only needs their clipped
    sum."""
    residual = torch.softmax(x @ weights + bias, dim=-1)
    residual[torch.arange(len(x)), labels] -= 1.0
    augmented = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)
    return (augmented[:, :, None] * residual[:, None, :]).reshape(len(x), -1)
