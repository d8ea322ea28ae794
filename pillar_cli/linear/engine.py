"""Exact DP-SGD for linear softmax heads, many configurations at once.

For softmax cross-entropy the per-sample gradient of (W, b) is [x_i, 1] ⊗ (p_i − e_{y_i}); its norm is
sqrt(‖x_i‖² + 1)·‖p_i − e_{y_i}‖. Clipping therefore needs no per-sample gradient tensors: scale each
residual by min(1, C / norm_i) and form the clipped sum with one matmul. The rows carry a column of ones, so a
head's bias is its last weight and one matmul yields both gradients.

Randomness is secret (pillar_cli.randomness): each stream of configurations sharing a seed and a batch size
draws its Poisson batches (uniforms, serially on the CPU) from one generator, and every configuration its
noise (one (C, d+1) draw per step, on the training device) from a generator of its own, so no two heads share
a noise draw. A sweep over learning rates and step counts gathers each batch once and trains all its heads
with one wide matmul; heads sharing a stream's batches are accounted together when a file releases them all
(privacy.file_guarantee). With a reproducible `NoiseSource` (experiments only) a configuration trains
identically alone or inside a sweep. Streams with the same step schedule step together, their batches side by
side in one residual tensor, so per-step work other than the matmuls runs once per step. Poisson sampling
draws geometric gaps between selected rows (an exact Bernoulli(q) process) in O(q·n) per step. The rate q =
B/ñ and the updates' divisor q·ñ read the row count ñ a sweep released (privacy/count.py), never the exact n.
On CUDA the same runs go through graphed.py (CUDA graphs). With the person as the privacy unit (persons.py) a
batch draws persons, and each person's clipped gradients are summed and clipped again; those runs take the
eager path on every device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pillar_cli.devices import resolve_device
from pillar_cli.lazy import torch
from pillar_cli.linear.graphed import GraphedLockstep, PaddedRows, steps_between
from pillar_cli.linear.persons import PersonBatch, PersonLayout, clip_persons
from pillar_cli.linear.rows import PrivateRows
from pillar_cli.linear.sampling import PoissonSampler
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.unit import Units
from pillar_cli.randomness import SECRET, NoiseSource

SAMPLING_CHUNK_STEPS = 32  # Poisson batches drawn this many steps at a time


@dataclass(frozen=True)
class RunConfig:
    lr: float
    steps: int
    batch_size: int
    seed: int
    momentum: float = 0.0
    weight_decay: float = 0.0
    ridge: float | None = None  # closed-form heads' regularisation λ (None: the method's default)
    # decay β of an exponential moving average of the iterates, released instead of the last one
    ema: float = 0.0

    @classmethod
    def one_release(cls, seed: int, ridge: float | None = None) -> RunConfig:
        """A mechanism run once on all rows (closed-form heads): no lr, one step, batch size 0 = all rows."""
        return cls(0.0, 1, 0, seed, ridge=ridge)

    @property
    def noise_label(self) -> tuple:
        """What names the run's noise stream under a seeded (experiment-only) source: not the step count or
        the averaging, so that a run of t steps repeats the first t steps of a longer one."""
        return ("noise", self.lr, self.batch_size, self.seed, self.momentum, self.weight_decay, self.ridge)

    @property
    def batches_label(self) -> tuple:
        """What names the run's Poisson batches under a seeded source: runs of one seed and batch size share
        them."""
        return ("batches", self.seed, self.batch_size)


@dataclass(frozen=True)
class LinearHead:
    weights: np.ndarray  # (d, C)
    bias: np.ndarray  # (C,)
    steps_run: int | None = None  # the updates the engine counted as it ran them (None: not counted)

    def logits(self, features: np.ndarray) -> np.ndarray:
        """float32 logits, accumulated in float64 (see projection.project)."""
        return (features.astype(np.float64) @ self.weights.astype(np.float64) + self.bias).astype(np.float32)

    def accuracy(self, features: np.ndarray, labels: np.ndarray) -> float:
        return float((self.logits(features).argmax(axis=1) == labels).mean())


def clipped_gradient_sum(
    weights: torch.Tensor,
    bias: torch.Tensor,
    features: torch.Tensor,
    labels: torch.Tensor,
    clip: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_i clip(∇_(W,b) CE(x_i, y_i)) for one batch, (d, C) and (C,), by the kernel every training step
    uses."""
    rows = PrivateRows(features, labels, clip, features.device)
    heads = torch.cat([weights.T, bias[:, None]], dim=1)[None, :, None, :].contiguous()
    sums = _clipped_sums(heads, rows, [torch.arange(len(labels), device=features.device)], [len(labels)])[
        0, :, 0
    ]
    return sums[:, :-1].T, sums[:, -1]


@dataclass
class _Stream:
    """Configurations sharing a seed and a batch size, sorted by decreasing steps (active ones are a prefix).

    Steps work on raw clipped sums: the 1/(q·n) of the update is folded into `step_size` (lr/(q·n)), and
    weight decay is scaled by q·n to match, so a step touches the (C, G, d+1) gradient once for the update."""

    configs: list[RunConfig]
    sampler: PoissonSampler
    noise_generators: list[torch.Generator]  # one per configuration
    noise_std: torch.Tensor  # (G,) σ·C per configuration
    step_size: torch.Tensor  # (G,) lr / (q·n)
    momentum: torch.Tensor
    decay: torch.Tensor  # (G,) weight decay · q·n
    ema: torch.Tensor  # (G,) β of the iterates' moving average (0: the last iterate)

    @classmethod
    def build(
        cls,
        configs: list[RunConfig],
        sigmas: list[float],
        clip: float | None,
        n: int,
        count: RowCount,
        device: torch.device,
        noise: NoiseSource,
    ):
        def column(values: list[float]) -> torch.Tensor:
            return torch.tensor(values, dtype=torch.float32, device=device)

        batch_size = configs[0].batch_size
        sampler = PoissonSampler(
            n, count.sample_rate(batch_size), noise.child(*configs[0].batches_label).torch()
        )
        expected = count.expected_batch(batch_size)
        return cls(
            configs,
            sampler,
            [noise.child(*config.noise_label).torch(device) for config in configs],
            column([s * (clip or 1.0) for s in sigmas]),
            column([c.lr / expected for c in configs]),
            column([c.momentum for c in configs]),
            column([c.weight_decay * expected for c in configs]),
            column([c.ema for c in configs]),
        )


def train_linear_heads(
    features: np.ndarray,
    labels: np.ndarray,
    num_classes: int,
    configs: list[RunConfig],
    noise_multipliers: list[float],
    clip: float | None,
    *,
    device: str = "cpu",
    init: tuple[np.ndarray, np.ndarray] | None = None,
    on_steps: Callable[[int], None] = lambda n: None,
    noise: NoiseSource = SECRET,
    count: RowCount | None = None,
    units: Units | None = None,
) -> list[LinearHead]:
    """Train one linear head per configuration with Poisson-sampled, clipped, noised SGD (σ = 0: no noise);
    `device` is cpu, cuda[:N] or auto; `on_steps(n)` hears of n more steps done (summed over configurations);
    `noise` hands out the batches' and every head's generators (secret unless seeded for an experiment);
    `count` is the n that sampling rates and the updates' scale read (None: the exact number of rows, for
    references). `units` (privacy/guarantee.py; left out: each row its own): grouped into persons, the person
    is the unit — batches draw persons, and each person's gradient sum is clipped to `clip`
    (linear/persons.py); `count` and batch sizes are then of persons. Runs that average their iterates (ema >
    0) or train persons take the eager path on CUDA too."""
    dev = resolve_device(device)
    units = units or Units.rows(len(features))
    graphed = dev.type == "cuda" and not any(c.ema for c in configs) and not units.grouped
    layout = PersonLayout(units.ids) if units.grouped else None
    rows = (
        PaddedRows(features, labels, clip, dev)
        if graphed
        else PrivateRows(features, labels, clip, dev, layout)
    )
    members_of: dict[
        tuple[int, ...], list[list[int]]
    ] = {}  # stream members, keyed by the stream's step schedule
    for seed, batch_size in sorted({(c.seed, c.batch_size) for c in configs}):
        members = sorted(
            (g for g, c in enumerate(configs) if (c.seed, c.batch_size) == (seed, batch_size)),
            key=lambda g: -configs[g].steps,
        )
        members_of.setdefault(tuple(configs[g].steps for g in members), []).append(members)
    heads: list[LinearHead | None] = [None] * len(configs)
    for group in members_of.values():  # a grid's streams share one schedule: they step together
        streams = [
            _Stream.build(
                [configs[g] for g in members],
                [noise_multipliers[g] for g in members],
                clip,
                len(rows),
                count or RowCount.exact(len(rows)),
                dev,
                noise,
            )
            for members in group
        ]
        train = _train_streams if isinstance(rows, PrivateRows) else _train_streams_graphed
        for members, trained in zip(group, train(streams, rows, num_classes, init, on_steps)):
            for g, head in zip(members, trained):
                heads[g] = head
    return heads


def _train_streams_graphed(
    streams: list[_Stream],
    rows: PaddedRows,
    num_classes: int,
    init: tuple[np.ndarray, np.ndarray] | None,
    on_steps: Callable[[int], None],
) -> list[list[LinearHead]]:
    """The GPU path (graphed.py): the same runs with static shapes, replayed as CUDA graphs."""
    lockstep = GraphedLockstep(streams, rows, num_classes, init, SAMPLING_CHUNK_STEPS)
    heads = lockstep.train(on_steps)
    weights, bias = heads[..., : rows.dim].cpu(), heads[..., rows.dim].cpu()  # (S, G, C, d), (S, G, C)
    taken = lockstep.steps_taken.round().long().cpu()
    return [
        [
            LinearHead(weights[s, g].T.numpy(), bias[s, g].numpy(), int(taken[s, g]))
            for g in range(heads.shape[1])
        ]
        for s in range(len(streams))
    ]


def _train_streams(
    streams: list[_Stream],
    rows: PrivateRows,
    num_classes: int,
    init: tuple[np.ndarray, np.ndarray] | None,
    on_steps: Callable[[int], None],
) -> list[list[LinearHead]]:
    """Streams with one step schedule (the same step counts, so the same number of active heads at every
    step), stepped together; configurations that are done leave after their last step."""
    schedule = streams[0].configs  # sorted by decreasing steps: the active configurations are a prefix
    group = _Lockstep(streams, rows, num_classes, init)
    for start in range(0, schedule[0].steps, SAMPLING_CHUNK_STEPS):
        chunk = [
            stream.sampler.batches(min(SAMPLING_CHUNK_STEPS, schedule[0].steps - start)) for stream in streams
        ]
        widths = [(batches < len(rows)).sum(1).tolist() for batches in chunk]  # valid indices are a prefix
        if rows.layout is None:  # batches of persons are expanded into rows on the host
            chunk = [batches.to(rows.x.device) for batches in chunk]
        for offset, step_widths in enumerate(zip(*widths)):
            step = start + offset
            if schedule[group.active - 1].steps <= step:
                group.retire(sum(c.steps > step for c in schedule))
            group.step(
                [batches[offset, :width] for batches, width in zip(chunk, step_widths)], list(step_widths)
            )
        on_steps(len(streams) * steps_between(schedule, start, start + SAMPLING_CHUNK_STEPS))
    group.retire(0)
    return [[group.finished[s, g] for g in range(len(schedule))] for s in range(len(streams))]


class _Lockstep:
    """The training state of streams stepped together: heads laid out (S, C, G, d+1), so that per-row work
    runs once over all streams' batches and the per-class reductions run over a leading, contiguous
    dimension."""

    def __init__(
        self,
        streams: list[_Stream],
        rows: PrivateRows,
        num_classes: int,
        init: tuple[np.ndarray, np.ndarray] | None,
    ):
        self.streams, self.rows, self.active = streams, rows, len(streams[0].configs)
        dim, dev = rows.x.shape[1] + 1, rows.x.device
        self.heads = torch.zeros(len(streams), num_classes, self.active, dim, device=dev)
        if init is not None:
            self.heads[..., :-1] = torch.as_tensor(init[0], device=dev).T[None, :, None, :]
            self.heads[..., -1] = torch.as_tensor(init[1], device=dev)[None, :, None]
        self.velocity = torch.zeros_like(self.heads)
        # (S, 1, G, 1): one value per stream and head, sliced to the active heads when some leave
        self.columns = {
            name: torch.stack([getattr(stream, name) for stream in streams])[:, None, :, None]
            for name in ("step_size", "noise_std", "momentum", "decay", "ema")
        }
        self.active_columns = self.columns
        self.uses = {
            name: bool((self.columns[name] > 0).any()) for name in ("noise_std", "momentum", "decay", "ema")
        }
        self.average = self.heads.clone() if self.uses["ema"] else self.heads  # what a head releases
        self.steps_taken = torch.zeros(len(streams), self.active, dtype=torch.int64)  # counted, not derived
        # one (C, d+1) draw per head, contiguous (adding a transposed draw cost 8x the contiguous add at d =
        # 2048), read in the heads' (S, C, G, d+1) layout through a permuted view
        self.noise = torch.empty(len(streams), self.active, num_classes, dim, device=dev)
        self.draws = [list(zip(stream.noise_generators, self.noise[s])) for s, stream in enumerate(streams)]
        self.finished: dict[tuple[int, int], LinearHead] = {}

    def retire(self, now: int) -> None:
        """Heads now..active are done: keep them, and keep the rest contiguous."""
        self.finished.update(
            ((s, g), _head(self.average[s], g, int(self.steps_taken[s, g])))
            for s in range(len(self.streams))
            for g in range(now, self.active)
        )
        self.active = now
        self.heads = self.heads[:, :, :now].contiguous()
        self.velocity = self.velocity[:, :, :now].contiguous()
        self.average = self.average[:, :, :now].contiguous() if self.uses["ema"] else self.heads
        self.active_columns = {name: column[:, :, :now] for name, column in self.columns.items()}

    def step(self, batches: list[torch.Tensor], widths: list[int]) -> None:
        columns = self.active_columns
        grad = _clipped_sums(self.heads, self.rows, batches, widths)
        if self.uses[
            "noise_std"
        ]:  # one (C, d+1) draw per active head and step, each from the head's generator
            for draws in self.draws:
                for generator, draw in draws[: self.active]:
                    torch.randn(draw.shape, generator=generator, out=draw)
            grad.addcmul_(self.noise[:, : self.active].permute(0, 2, 1, 3), columns["noise_std"])
        if self.uses["decay"]:  # the bias (last column) is not decayed
            grad[..., :-1].addcmul_(self.heads[..., :-1], columns["decay"])
        if self.uses["momentum"]:
            grad = self.velocity.mul_(columns["momentum"]).add_(grad)
        self.heads.addcmul_(grad, columns["step_size"], value=-1.0)
        self.steps_taken[:, : self.active] += 1
        if self.uses["ema"]:  # average ← β·average + (1 − β)·heads: post-processing of the private iterates
            self.average.sub_(self.heads).mul_(columns["ema"]).add_(self.heads)


def _head(heads: torch.Tensor, g: int, steps_run: int) -> LinearHead:
    """Head g of (C, G, d+1) weights-and-bias, as (d, C) weights and (C,) bias."""
    return LinearHead(heads[:, g, :-1].T.cpu().numpy(), heads[:, g, -1].cpu().numpy(), steps_run)


def _clipped_sums(
    heads: torch.Tensor, rows: PrivateRows, batches: list[torch.Tensor], widths: list[int]
) -> torch.Tensor:
    """Clipped gradient sums of S streams' G heads ((S, C, G, d+1), bias last), stream s on the widths[s] row
    indices batches[s]: (S, C, G, d+1).

    Row i's gradient is [x_i, 1] ⊗ (p_i − e_{y_i}); its clip factor min(1, C/‖·‖) = rsqrt(max(1, ‖p_i − e_y‖²·
    clip_scale_i)). All streams' rows sit side by side in one (C, G, ΣB) residual tensor: each stream's
    matmuls read and write its own column block (strided, no copies) and the softmax, one-hot and norms run
    once. Reductions over classes run over the leading, contiguous dimension (a last dimension of C ≈ 10 does
    not vectorise on CPU)."""
    streams, classes, count, dim = heads.shape
    person_batch = None
    if rows.layout is not None:  # batches of persons: their rows, each person's gradient clipped below
        expanded = [rows.layout.expand(b.numpy(), rows.x.device) for b in batches]
        batches, widths, person_batch = (
            [e.rows for e in expanded],
            [len(e.rows) for e in expanded],
            PersonBatch.joined(expanded),
        )
    batch = batches[0] if streams == 1 else torch.cat(batches)
    total = sum(widths)
    xb = rows.gather(batch, total)
    flat_heads = heads.view(streams, classes * count, dim)
    if streams == 1:  # a single run: plain matmuls, no block views (their launches cost ~5 % of a small step)
        logits = flat_heads[0] @ xb.T
    else:
        x_blocks = xb.split(widths)
        logits = torch.empty(classes * count, total, device=xb.device)
        for head_block, x_block, out in zip(flat_heads, x_blocks, logits.split(widths, dim=1)):
            torch.mm(head_block, x_block.T, out=out)
    residuals = torch.softmax(logits.view(classes, count, total), dim=0)
    one_hot = torch.zeros(classes, 1, total, device=xb.device)
    one_hot.scatter_(0, torch.index_select(rows.y, 0, batch).view(1, 1, total), 1.0)
    # p − e_y: a broadcast (C, 1, B) one-hot is cheaper than indexing the (C, G, B) tensor
    residuals.sub_(one_hot)
    if rows.clip_scale is not None:
        scales = torch.index_select(rows.clip_scale, 0, batch)
        squared_norms = torch.linalg.vecdot(residuals, residuals, dim=0)
        residuals.mul_(squared_norms.mul_(scales).clamp_min_(1.0).rsqrt_())
        if person_batch is not None:  # ‖x̃_i‖² = clip_scale_i·C²
            clip_persons(residuals, scales.mul_(rows.clip**2), person_batch, rows.clip)
    flat = residuals.view(classes * count, total)
    if streams == 1:
        return (flat @ xb).view(1, classes, count, dim)
    sums = torch.empty(streams, classes * count, dim, device=xb.device)
    for residual_block, x_block, out in zip(flat.split(widths, dim=1), x_blocks, sums):
        torch.mm(residual_block, x_block, out=out)
    return sums.view(streams, classes, count, dim)
