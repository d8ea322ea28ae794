"""Poisson sampling for DP-SGD: every row joins a step's batch independently with probability q, which is what
the accountants assume; batches are drawn for a chunk of steps at once from a seeded generator."""

from __future__ import annotations

import math

from pillar_cli.lazy import torch


class PoissonSampler:
    """Rows selected independently with probability q, drawn as geometric gaps between selected rows."""

    def __init__(self, n: int, rate: float, generator: torch.Generator):
        self.n, self.rate, self.generator = n, rate, generator
        mean = n * rate
        self.draws = math.ceil(mean + 10 * math.sqrt(mean * (1 - rate)) + 32)

    def batches(self, steps: int) -> torch.Tensor:
        """(steps, width): each row the increasing indices of one batch (size Binomial(n, q)), padded with
        n."""
        positions = torch.cumsum(self._gaps(steps), dim=1) - 1
        while (
            short := positions[:, -1] < self.n
        ).any():  # more successes than gaps drawn (p < 1e-20): extend
            extra = positions[:, -1:] + torch.cumsum(self._gaps(steps), dim=1)
            positions = torch.cat([positions, torch.where(short[:, None], extra, self.n)], dim=1)
        return positions.clamp_(max=self.n)

    def _gaps(self, steps: int) -> torch.Tensor:
        if self.rate >= 1.0:
            return torch.ones(steps, self.n + 1, dtype=torch.int64)
        uniform = 1.0 - torch.rand(steps, self.draws, generator=self.generator, dtype=torch.float64)
        return torch.floor(torch.log(uniform) / math.log1p(-self.rate)).to(torch.int64) + 1
