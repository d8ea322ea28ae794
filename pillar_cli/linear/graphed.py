"""The exact DP-SGD engine's GPU path: static shapes, 32 steps per CUDA graph.

On a GPU a linear head's step is a few microseconds of arithmetic behind some twenty kernel launches, so the
eager engine is bound by the host launching kernels. This path makes every step of a chunk the same shape and
replays the chunk as one captured CUDA graph:

- Rows are stored once as [x, 1, 0, ...] padded to an aligned width (cuBLAS needs aligned rows for its fast
  kernels), plus one all-zero row at index n. A Poisson batch is padded with index n up to a bucketed width; a
  padded slot's gradient is [0, 0] ⊗ r = 0 exactly, so padding changes nothing but the shape.
- Heads that are done (fewer steps than the longest run of the group) keep stepping with a step size of 0, so
  the number of heads never changes; their weights stay those of their last step.
- Every head's noise is drawn per chunk, (32, C, width) standard normals from the head's own (secret) device
  generator, whether or not the run lasts the whole chunk: no two heads share a draw, and with a seeded source
  (experiments only) a configuration draws the same noise alone or inside a sweep.

Each step is the same DP-SGD step as the eager engine's: clip factor min(1, C/‖[x, 1] ⊗ (p − e_y)‖) from
norms, one batched matmul per direction, Gaussian noise σ·C, the update divided by the expected batch size.
Heads are laid out (S, G, C, width) so that the softmax and the norms over classes run over the innermost
dimension: a softmax over an outer dimension of 100 classes took 64 µs of a 156 µs step on an H100.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from pillar_cli.lazy import torch

ROW_ALIGNMENT = 32  # floats per row are padded to a multiple of this
WIDTH_QUANTUM = 128  # padded batch widths are rounded up to this: few distinct graphs per run


def steps_between(configs: list, start: int, stop: int) -> int:
    """How many of the configurations' steps fall in [start, stop)."""
    return sum(max(0, min(stop, c.steps) - start) for c in configs)


class PaddedRows:
    """The private rows as [x, 1, 0...] of an aligned width, with an all-zero row n that padded slots point
    at."""

    def __init__(
        self,
        features: np.ndarray | torch.Tensor,
        labels: np.ndarray | torch.Tensor,
        clip: float | None,
        device: torch.device,
    ):
        x = torch.as_tensor(features, dtype=torch.float32)
        n, self.dim = x.shape
        self.n = n
        self.width = math.ceil((self.dim + 1) / ROW_ALIGNMENT) * ROW_ALIGNMENT
        self.x = torch.zeros(n + 1, self.width, device=device)
        self.x[:n, : self.dim] = x.to(device)
        self.x[:n, self.dim] = 1.0
        self.y = torch.zeros(n + 1, dtype=torch.int64, device=device)
        self.y[:n] = torch.as_tensor(labels, dtype=torch.int64).to(device)
        # (‖x‖² + 1) / C² per row; 0 for the zero row, whose clip factor is then 1 (it has nothing to clip)
        self.clip_scale = None if clip is None else self.x.square().sum(1).div_(clip * clip)

    def __len__(self) -> int:
        return self.n


class ChunkInputs:
    """What one chunk of steps reads, in fixed buffers a captured graph points at: row indices (steps, S, W),
    noise (steps, S, G, C, width) and step sizes (steps, S, G, 1, 1)."""

    def __init__(
        self,
        steps: int,
        streams: int,
        width: int,
        classes: int,
        heads: int,
        row_width: int,
        device: torch.device,
    ):
        self.index = torch.empty(steps, streams, width, dtype=torch.int64, device=device)
        self.noise = torch.zeros(steps, streams, heads, classes, row_width, device=device)
        self.draws = [
            [torch.empty(steps, classes, row_width, device=device) for _ in range(heads)]
            for _ in range(streams)
        ]
        self.step_size = torch.zeros(steps, streams, heads, 1, 1, device=device)


class GraphedLockstep:
    """Streams with one step schedule (the `_Stream`s of engine.py), stepped `chunk` steps at a time."""

    def __init__(
        self,
        streams: list,
        rows: PaddedRows,
        num_classes: int,
        init: tuple[np.ndarray, np.ndarray] | None,
        chunk: int,
    ):
        self.streams, self.rows, self.chunk = streams, rows, chunk
        device, count = rows.x.device, len(streams[0].configs)
        self.longest = max(c.steps for c in streams[0].configs)
        # (G,), as in every stream
        self.steps = torch.tensor([c.steps for c in streams[0].configs], device=device)
        self.offsets = torch.arange(chunk, device=device)
        self.heads = torch.zeros(len(streams), count, num_classes, rows.width, device=device)
        if init is not None:
            self.heads[..., : rows.dim] = torch.as_tensor(init[0], device=device).T
            self.heads[..., rows.dim] = torch.as_tensor(init[1], device=device)
        self.velocity = torch.zeros_like(self.heads)
        # updates applied, counted on the device
        self.steps_taken = torch.zeros(len(streams), count, device=device)
        self.columns = {
            name: torch.stack([getattr(s, name) for s in streams])[:, :, None, None]
            for name in ("step_size", "noise_std", "momentum", "decay")
        }
        self.uses = {
            name: bool((self.columns[name] > 0).any()) for name in ("noise_std", "momentum", "decay")
        }
        self.use_graphs = device.type == "cuda"
        self.inputs: dict[int, ChunkInputs] = {}
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}

    def train(self, on_steps: Callable[[int], None] = lambda n: None) -> torch.Tensor:
        """Every chunk of the longest run; the heads (S, G, C, width) after each run's last step. `on_steps`
        hears of the steps queued (the device may still be running them)."""
        for start in range(0, self.longest, self.chunk):
            self._run_chunk(start)
            on_steps(len(self.streams) * steps_between(self.streams[0].configs, start, start + self.chunk))
        return self.heads

    def _run_chunk(self, start: int) -> None:
        """Fill the chunk's input buffers without waiting for the device (the previous chunk may still
        run)."""
        steps = min(self.chunk, self.longest - start)
        batches = [stream.sampler.batches(steps) for stream in self.streams]
        width = max(int((b < self.rows.n).sum(1).max()) for b in batches)
        width = max(WIDTH_QUANTUM, math.ceil(width / WIDTH_QUANTUM) * WIDTH_QUANTUM)
        index = torch.full((self.chunk, len(self.streams), width), self.rows.n, dtype=torch.int64)
        for s, b in enumerate(batches):
            used = min(width, b.shape[1])
            index[:steps, s, :used] = b[:, :used]  # a batch's indices are a prefix, padded with n
        inputs = self._inputs(width)
        inputs.index.copy_(index.pin_memory() if self.use_graphs else index, non_blocking=True)
        # (chunk, G): 0 once a run is done
        active = (self.offsets[:, None] + start < self.steps[None, :]).float()
        torch.mul(self.columns["step_size"][None], active[:, None, :, None, None], out=inputs.step_size)
        if self.uses["noise_std"]:
            for s, stream in enumerate(self.streams):  # each head's chunk of draws from its own generator
                for g, generator in enumerate(stream.noise_generators):
                    torch.randn(inputs.draws[s][g].shape, generator=generator, out=inputs.draws[s][g])
                    inputs.noise[:, s, g].copy_(inputs.draws[s][g])
        if self.use_graphs:
            self._graph(width).replay()
        else:
            self._steps(inputs, self.heads, self.velocity)

    def _inputs(self, width: int) -> ChunkInputs:
        if width not in self.inputs:
            streams, count, classes, row_width = self.heads.shape
            self.inputs[width] = ChunkInputs(
                self.chunk, streams, width, classes, count, row_width, self.heads.device
            )
        return self.inputs[width]

    def _graph(self, width: int) -> torch.cuda.CUDAGraph:
        """The chunk's steps captured once per padded width, after a warm-up on scratch copies of the
        state."""
        if width not in self.graphs:
            inputs = self.inputs[width]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # cuBLAS and the allocator set themselves up outside the capture
                self._steps(inputs, self.heads.clone(), self.velocity.clone(), steps=1)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self._steps(inputs, self.heads, self.velocity)
            self.graphs[width] = graph
        return self.graphs[width]

    def _steps(
        self, inputs: ChunkInputs, heads: torch.Tensor, velocity: torch.Tensor, steps: int | None = None
    ) -> None:
        for t in range(steps or self.chunk):
            self._step(heads, velocity, inputs.index[t], inputs.noise[t], inputs.step_size[t])

    def _step(
        self,
        heads: torch.Tensor,
        velocity: torch.Tensor,
        index: torch.Tensor,
        noise: torch.Tensor,
        step_size: torch.Tensor,
    ) -> None:
        """One DP-SGD step of every head in place: heads (S, G, C, width), index (S, W), noise (S, G, C,
        width)."""
        streams, count, classes, width = heads.shape
        rows, flat_index = self.rows, index.view(-1)
        xb = rows.x.index_select(0, flat_index).view(streams, -1, width)  # (S, W, width)
        logits = torch.bmm(xb, heads.view(streams, count * classes, width).transpose(1, 2))  # (S, W, G·C)
        residuals = torch.softmax(logits.view(streams, -1, count, classes), dim=-1)
        labels = rows.y.index_select(0, flat_index).view(streams, -1, 1, 1).expand(-1, -1, count, 1)
        residuals.scatter_add_(
            -1, labels, torch.full((1, 1, 1, 1), -1.0, device=heads.device).expand_as(labels)
        )
        if rows.clip_scale is not None:  # clip factor rsqrt(max(1, ‖p − e_y‖²·(‖x‖² + 1)/C²))
            squared = torch.linalg.vecdot(residuals, residuals, dim=-1)[..., None]  # (S, W, G, 1)
            scale = rows.clip_scale.index_select(0, flat_index).view(streams, -1, 1, 1)
            residuals.mul_(squared.mul_(scale).clamp_min_(1.0).rsqrt_())
        grad = torch.bmm(residuals.view(streams, -1, count * classes).transpose(1, 2), xb).view_as(heads)
        if self.uses["noise_std"]:
            grad.addcmul_(noise, self.columns["noise_std"])
        if self.uses["decay"]:  # the bias (column d) and the padding are not decayed
            grad[..., : rows.dim].addcmul_(heads[..., : rows.dim], self.columns["decay"])
        if self.uses["momentum"]:
            grad = velocity.mul_(self.columns["momentum"]).add_(grad)
        heads.addcmul_(grad, step_size, value=-1.0)
        if heads is self.heads:  # not the warm-up on scratch copies
            self.steps_taken.add_(step_size[..., 0, 0].sign())  # a finished head's step size is 0
