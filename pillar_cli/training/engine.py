"""Exact DP-SGD for linear softmax heads, many configurations at once.

For softmax cross-entropy the per-sample gradient of (W, b) is [x_i, 1] ⊗ (p_i − e_{y_i}); its norm is
sqrt(‖x_i‖² + 1)·‖p_i − e_{y_i}‖. Clipping therefore needs no per-sample gradient tensors: scale each
residual by min(1, C / norm_i) and form the clipped sum with one matmul. The rows carry a column of ones, so a
head's bias is its last weight and one matmul yields both gradients.

Randomness belongs to a configuration's seed: one generator for its Poisson batches (uniforms, drawn serially,
so chunks of steps consume the stream exactly as single steps do) and one for its noise (one draw per step), so a
configuration trains identically alone or inside a sweep. Configurations that share a seed and a batch size
therefore share their batches and their standard-normal noise draws (common random numbers; each is scaled by the
run's own σ·C): a sweep over learning rates and step counts gathers each batch once and trains all of its heads
with one wide matmul. Every run remains an exact DP-SGD run with its own σ. Poisson sampling draws geometric gaps
between selected rows (an exact Bernoulli(q) process over the rows) in O(q·n) rather than O(n) per step. Updates
divide by the expected batch size q·n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

SAMPLING_CHUNK_STEPS = 32  # Poisson batches drawn this many steps at a time
NOISE_SEED_SALT = 0x5DEECE66D  # the noise generator's seed differs from the sampler's


@dataclass(frozen=True)
class RunConfig:
    lr: float
    steps: int
    batch_size: int
    seed: int
    momentum: float = 0.0
    weight_decay: float = 0.0


@dataclass(frozen=True)
class LinearHead:
    weights: np.ndarray  # (d, C)
    bias: np.ndarray  # (C,)

    def logits(self, features: np.ndarray) -> np.ndarray:
        return features @ self.weights + self.bias

    def accuracy(self, features: np.ndarray, labels: np.ndarray) -> float:
        return float((self.logits(features).argmax(axis=1) == labels).mean())


def per_sample_gradients(x: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor,
                         bias: torch.Tensor) -> torch.Tensor:
    """(n, (d+1)·C) materialised per-sample gradients vec([x_i, 1] ⊗ (softmax(x_i W + b) − e_{y_i})), in x's dtype.

    For consumers that need the vectors themselves (GEP's anchor, GSD); DP-SGD only needs their clipped sum."""
    residual = torch.softmax(x @ weights + bias, dim=-1)
    residual[torch.arange(len(x)), labels] -= 1.0
    augmented = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)
    return (augmented[:, :, None] * residual[:, None, :]).reshape(len(x), -1)


def clipped_gradient_sum(weights: torch.Tensor, bias: torch.Tensor, features: torch.Tensor, labels: torch.Tensor,
                         clip: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_i clip(∇_(W,b) CE(x_i, y_i)) for one batch, (d, C) and (C,), by the kernel every training step uses."""
    rows = PrivateRows(features, labels, clip, features.device)
    heads = torch.cat([weights.T, bias[:, None]], dim=1)[:, None, :].contiguous()
    sums = _clipped_sums(heads, rows, torch.arange(len(labels)))[:, 0]
    return sums[:, :-1].T, sums[:, -1]


class PrivateRows:
    """The private training rows as every step reads them: a batch comes back next to a column of ones (the bias
    input), gathered into a reused buffer rather than from an augmented copy of the whole training set."""

    def __init__(self, features: np.ndarray | torch.Tensor, labels: np.ndarray | torch.Tensor, clip: float | None,
                 device: torch.device):
        self.x = torch.as_tensor(features, dtype=torch.float32).to(device)  # no copy for float32 on the CPU
        self.y = torch.as_tensor(labels, dtype=torch.int64).to(device)
        # (‖x‖² + 1) / C²: row i's gradient norm² over C² is ‖p_i − e_{y_i}‖² times this
        self.clip_scale = None if clip is None else \
            torch.linalg.vector_norm(self.x, dim=1).square_().add_(1.0).div_(clip * clip)
        self._buffer = torch.ones(0, self.x.shape[1] + 1, device=device)

    def __len__(self) -> int:
        return len(self.y)

    def gather(self, batch: torch.Tensor) -> torch.Tensor:
        """(B, d + 1): the batch's features and a final column of ones."""
        if len(batch) > len(self._buffer):
            self._buffer = torch.ones(max(len(batch), 2 * len(self._buffer)), self.x.shape[1] + 1,
                                      device=self.x.device)
        rows = self._buffer[:len(batch)]
        torch.index_select(self.x, 0, batch, out=rows[:, :-1])  # index_select: ~4x faster than advanced indexing
        return rows


class PoissonSampler:
    """Rows selected independently with probability q, drawn as geometric gaps between selected rows."""

    def __init__(self, n: int, rate: float, generator: torch.Generator):
        self.n, self.rate, self.generator = n, rate, generator
        self.expected_batch = n * rate
        mean = n * rate
        self.draws = int(math.ceil(mean + 10 * math.sqrt(mean * (1 - rate)) + 32))

    def batches(self, steps: int) -> torch.Tensor:
        """(steps, width): each row the increasing indices of one batch (size Binomial(n, q)), padded with n."""
        positions = torch.cumsum(self._gaps(steps), dim=1) - 1
        while (short := positions[:, -1] < self.n).any():  # more successes than gaps drawn (p < 1e-20): extend
            extra = positions[:, -1:] + torch.cumsum(self._gaps(steps), dim=1)
            positions = torch.cat([positions, torch.where(short[:, None], extra, self.n)], dim=1)
        return positions.clamp_(max=self.n)

    def _gaps(self, steps: int) -> torch.Tensor:
        if self.rate >= 1.0:
            return torch.ones(steps, self.n + 1, dtype=torch.int64)
        uniform = 1.0 - torch.rand(steps, self.draws, generator=self.generator, dtype=torch.float64)
        return torch.floor(torch.log(uniform) / math.log1p(-self.rate)).to(torch.int64) + 1


@dataclass
class _Stream:
    """Configurations sharing a seed and a batch size, sorted by decreasing steps (active ones are a prefix).

    Steps work on raw clipped sums: the 1/(q·n) of the update is folded into `step_size` (lr/(q·n)), and weight
    decay is scaled by q·n to match, so a step touches the (C, G, d+1) gradient once for the update."""

    configs: list[RunConfig]
    sampler: PoissonSampler
    noise_generator: torch.Generator
    noise_std: torch.Tensor  # (G,) σ·C per configuration
    step_size: torch.Tensor  # (G,) lr / (q·n)
    momentum: torch.Tensor
    decay: torch.Tensor  # (G,) weight decay · q·n

    @classmethod
    def build(cls, configs: list[RunConfig], sigmas: list[float], clip: float | None, n: int, device: torch.device):
        def column(values: list[float]) -> torch.Tensor:
            return torch.tensor(values, dtype=torch.float32, device=device)

        seed, batch_size = configs[0].seed, configs[0].batch_size
        sampler = PoissonSampler(n, batch_size / n, torch.Generator().manual_seed(seed))
        expected = sampler.expected_batch
        return cls(configs, sampler, torch.Generator().manual_seed(seed ^ NOISE_SEED_SALT),
                   column([s * (clip or 1.0) for s in sigmas]), column([c.lr / expected for c in configs]),
                   column([c.momentum for c in configs]), column([c.weight_decay * expected for c in configs]))

    def active(self, step: int) -> int:
        return sum(c.steps > step for c in self.configs)


def train_linear_heads(features: np.ndarray, labels: np.ndarray, num_classes: int, configs: list[RunConfig],
                       noise_multipliers: list[float], clip: float | None, *, device: str = "cpu",
                       init: tuple[np.ndarray, np.ndarray] | None = None) -> list[LinearHead]:
    """Train one linear head per configuration with Poisson-sampled, clipped, noised SGD (σ = 0: no noise)."""
    dev = torch.device(device)
    rows = PrivateRows(features, labels, clip, dev)
    heads: list[LinearHead | None] = [None] * len(configs)
    for seed, batch_size in sorted({(c.seed, c.batch_size) for c in configs}):
        members = sorted((g for g, c in enumerate(configs) if (c.seed, c.batch_size) == (seed, batch_size)),
                         key=lambda g: -configs[g].steps)
        stream = _Stream.build([configs[g] for g in members], [noise_multipliers[g] for g in members], clip,
                               len(rows), dev)
        for g, head in zip(members, _train_stream(stream, rows, num_classes, init)):
            heads[g] = head
    return heads


def _train_stream(stream: _Stream, rows: PrivateRows, num_classes: int,
                  init: tuple[np.ndarray, np.ndarray] | None) -> list[LinearHead]:
    """All configurations of one stream: heads laid out (C, G, d+1) so that one matmul serves every head and the
    per-class reductions run over the leading dimension (contiguous, vectorised) rather than a short last one."""
    n, dim, dev = len(rows), rows.x.shape[1] + 1, rows.x.device
    active = len(stream.configs)
    heads = torch.zeros(num_classes, active, dim, device=dev)
    if init is not None:
        heads[:, :, :-1] = torch.as_tensor(init[0], device=dev).T[:, None, :]
        heads[:, :, -1] = torch.as_tensor(init[1], device=dev)[:, None]
    velocity = torch.zeros_like(heads)
    uses_momentum, uses_decay = bool((stream.momentum > 0).any()), bool((stream.decay > 0).any())
    noisy = bool((stream.noise_std > 0).any())
    finished: dict[int, LinearHead] = {}
    total_steps = stream.configs[0].steps
    for start in range(0, total_steps, SAMPLING_CHUNK_STEPS):
        batches = stream.sampler.batches(min(SAMPLING_CHUNK_STEPS, total_steps - start))
        widths = (batches < n).sum(1).tolist()  # each row's valid indices are a prefix
        batches = batches.to(dev)
        for offset, width in enumerate(widths):
            now = stream.active(start + offset)
            if now < active:  # configurations that are done leave; the rest stay contiguous
                finished.update((g, _head(heads, g)) for g in range(now, active))
                active = now
                heads, velocity = heads[:, :active].contiguous(), velocity[:, :active].contiguous()
            grad = _clipped_sums(heads, rows, batches[offset, :width])
            if noisy:  # one (d+1, C) draw per step: a normal draw's stream depends on its shape, so never draw chunks
                step_noise = torch.randn(dim, num_classes, generator=stream.noise_generator).to(dev)
                grad.addcmul_(step_noise.T[:, None, :], stream.noise_std[None, :active, None])
            if uses_decay:  # the bias (last column) is not decayed
                grad[:, :, :-1].addcmul_(heads[:, :, :-1], stream.decay[None, :active, None])
            if uses_momentum:
                grad = velocity.mul_(stream.momentum[None, :active, None]).add_(grad)
            heads.addcmul_(grad, stream.step_size[None, :active, None], value=-1.0)
    finished.update((g, _head(heads, g)) for g in range(active))
    return [finished[g] for g in range(len(stream.configs))]


def _head(heads: torch.Tensor, g: int) -> LinearHead:
    """Head g of (C, G, d+1) weights-and-bias, as (d, C) weights and (C,) bias."""
    return LinearHead(heads[:, g, :-1].T.cpu().numpy(), heads[:, g, -1].cpu().numpy())


def _clipped_sums(heads: torch.Tensor, rows: PrivateRows, batch: torch.Tensor) -> torch.Tensor:
    """Clipped gradient sums of G heads ((C, G, d+1), bias last) on one shared batch of row indices: (C, G, d+1).

    Row i's gradient is [x_i, 1] ⊗ (p_i − e_{y_i}); its clip factor min(1, C/‖·‖) = rsqrt(max(1, ‖p_i − e_y‖²·
    clip_scale_i)). Residuals live as (C, G, B) so that the reductions over classes run over the leading,
    contiguous dimension (a last dimension of C ≈ 10 does not vectorise on CPU)."""
    classes, count, dim = heads.shape
    xb = rows.gather(batch)
    residuals = torch.softmax((heads.view(classes * count, dim) @ xb.T).view(classes, count, len(batch)), dim=0)
    one_hot = torch.zeros(classes, 1, len(batch), device=xb.device)
    one_hot.scatter_(0, torch.index_select(rows.y, 0, batch).view(1, 1, -1), 1.0)
    residuals.sub_(one_hot)  # p − e_y: a broadcast (C, 1, B) one-hot is cheaper than indexing the (C, G, B) tensor
    if rows.clip_scale is not None:
        squared_norms = torch.linalg.vecdot(residuals, residuals, dim=0)
        residuals.mul_(squared_norms.mul_(torch.index_select(rows.clip_scale, 0, batch)).clamp_min_(1.0).rsqrt_())
    return (residuals.view(classes * count, len(batch)) @ xb).view(classes, count, dim)
