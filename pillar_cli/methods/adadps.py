"""AdaDPS (Li, Zaheer, Reddi, Smith, "Private adaptive optimization with side information", ICML 2022), the
RMSProp variant of the PILLAR paper's Table 1: DP-SGD on all standardised features whose per-sample gradients
are preconditioned, before clipping, by A = 1 / (√v + ε_c), where v is an exponential moving average (β) of
the squared mean gradient of the same linear head on a batch of PUBLIC LABELLED rows at the current weights.

The public labelled rows are side information: they are not protected, and the model says that public labels
were used. The privacy is DP-SGD's: Poisson sampling, clipping of the preconditioned gradient A ⊙ g_i to C,
Gaussian noise σC on its sum — the same DP event. For a linear head g_i = x̃_i ⊗ r_i (x̃ = [x, 1], r = softmax
− one-hot), so ‖A ⊙ g_i‖² = (x̃_i²)ᵀ A² (r_i²) and Σ_i f_i A ⊙ g_i = A ⊙ (X̃ᵀ (f ⊙ R)): the clipped sum never
materialises a per-sample gradient, as in the main engine.

With the person as the privacy unit, batches draw persons (linear/persons.py's layout) and each person's sum
of row-clipped preconditioned gradients is clipped again to C, as the main engine does; A mixes coordinates
per class, so a person's sum is formed (persons × (d+1) × C per step) rather than read from pairs of rows.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from pillar_cli.errors import UsageError, check_fraction, check_positive, param
from pillar_cli.lazy import torch
from pillar_cli.linear.engine import SAMPLING_CHUNK_STEPS, LinearHead, RunConfig
from pillar_cli.linear.persons import person_ordered
from pillar_cli.linear.sampling import PoissonSampler
from pillar_cli.methods.base import Cannot, Cell, Reads, Run, each_run, option
from pillar_cli.methods.projected import ProjectedDPSGD
from pillar_cli.privacy import dp_sgd_event
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.unit import Units
from pillar_cli.projection import project
from pillar_cli.randomness import SECRET, NoiseSource

PUBLIC_SEED_SALT = 0xADAD95  # public batches are drawn from their own generator
# per-row gradients formed at once with the person as the unit (16 MiB of float32)
OUTER_PRODUCT_VALUES = 2**22


@dataclass(frozen=True)
class AdaDPSOptions:
    conditioner: float = option(1e-3, "ε_c of the preconditioner 1 / (√v + ε_c).")
    average_decay: float = option(0.9, "β of the preconditioner's moving average v ← β v + (1 − β) ḡ².")
    public_batch: int = option(256, "public labelled rows per preconditioner update.")

    def __post_init__(self) -> None:
        check_positive("conditioner", self.conditioner)
        check_fraction("average_decay", self.average_decay)
        if self.public_batch < 1:
            raise UsageError(f"{param('public_batch')} must be at least 1 (got {self.public_batch})")


Preconditioner = Callable[["torch.Tensor"], "torch.Tensor"]  # weights (d+1, C) → A (d+1, C)


def _rows_and_residuals(
    x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """x̃ = [x, 1] (B, d+1) and r = softmax(x̃W) − one-hot (B, C): row i's gradient is x̃_i ⊗ r_i."""
    augmented = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)
    residual = torch.softmax(augmented @ weights, dim=1)
    residual[torch.arange(len(x)), y] -= 1.0
    return augmented, residual


def _clipped_rows(
    x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor, scale: torch.Tensor, clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x̃, f ⊙ r): the rows and their residuals scaled by f_i = min(1, C/‖A ⊙ g_i‖), so that A ⊙ (x̃_i ⊗ f_i
    r_i) is row i's clipped preconditioned gradient."""
    augmented, residual = _rows_and_residuals(x, y, weights)
    norms = ((augmented.square() @ scale.square()) * residual.square()).sum(dim=1).sqrt()
    return augmented, residual * torch.clamp(clip / torch.clamp(norms, min=1e-12), max=1.0)[:, None]


def preconditioned_clipped_sum(
    x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor, scale: torch.Tensor, clip: float
) -> torch.Tensor:
    """Σ_i min(1, C/‖A ⊙ g_i‖) A ⊙ g_i for rows x (B, d), labels y, weights (d+1, C), preconditioner A =
    `scale`."""
    augmented, residual = _clipped_rows(x, y, weights, scale, clip)
    return scale * (augmented.T @ residual)


def preconditioned_person_sum(
    x: torch.Tensor,
    y: torch.Tensor,
    weights: torch.Tensor,
    scale: torch.Tensor,
    clip: float,
    person: torch.Tensor,
    persons: int,
) -> torch.Tensor:
    """Σ_p min(1, C/‖S_p‖) S_p, S_p = Σ_{i∈p} min(1, C/‖A ⊙ g_i‖) A ⊙ g_i: rows clipped, then each person's
    sum of them (`person`: each row's position among the batch's `persons` persons)."""
    augmented, residual = _clipped_rows(x, y, weights, scale, clip)
    sums = torch.zeros(persons, *weights.shape, dtype=weights.dtype)
    rows_a_block = max(1, OUTER_PRODUCT_VALUES // weights.numel())
    for start in range(0, len(x), rows_a_block):  # the rows' outer products x̃_i ⊗ r_i, a block at a time
        block = slice(start, start + rows_a_block)
        sums.index_add_(0, person[block], augmented[block, :, None] * residual[block, None, :])
    sums *= scale
    norms = sums.square().sum(dim=(1, 2)).sqrt()
    return (sums * torch.clamp(clip / torch.clamp(norms, min=1e-12), max=1.0)[:, None, None]).sum(dim=0)


def mean_gradient(x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The linear head's mean gradient (d+1, C) on rows x with labels y."""
    augmented, residual = _rows_and_residuals(x, y, weights)
    return augmented.T @ residual / len(x)


def public_preconditioner(
    public_x: np.ndarray, public_y: np.ndarray, options: AdaDPSOptions, seed: int
) -> Preconditioner:
    """RMSProp on public gradients: each call draws a public batch, updates v and returns 1 / (√v + ε_c)."""
    x, y = torch.as_tensor(public_x, dtype=torch.float32), torch.as_tensor(public_y, dtype=torch.int64)
    generator = torch.Generator().manual_seed(seed ^ PUBLIC_SEED_SALT)
    state: dict[str, torch.Tensor] = {}

    def scale(weights: torch.Tensor) -> torch.Tensor:
        rows = torch.randint(len(x), (min(options.public_batch, len(x)),), generator=generator)
        squared = mean_gradient(x[rows], y[rows], weights).square()
        decay = options.average_decay
        v = squared if "v" not in state else decay * state["v"] + (1 - decay) * squared
        state["v"] = v
        return 1.0 / (v.sqrt() + options.conditioner)

    return scale


def train_adadps(
    features: np.ndarray,
    labels: np.ndarray,
    num_classes: int,
    config: RunConfig,
    sigma: float,
    clip: float,
    preconditioner: Preconditioner,
    noise: NoiseSource = SECRET,
    count: RowCount | None = None,
    units: Units | None = None,
) -> LinearHead:
    """DP-SGD with preconditioned per-sample gradients; with A ≡ 1 it is the main engine's DP-SGD step for
    step (with one seeded `noise` source: the same Poisson batches, the same noise draws). `count`: the n that
    the sampling rate and the update's scale read (None: the exact number of units). `units` (left out: each
    row its own): grouped into persons, the person is the unit — batches draw persons, and each person's
    clipped sum is clipped again."""
    x, y, layout = person_ordered(features, labels, units)
    n, dim = (len(x) if layout is None else len(layout)), x.shape[1]
    count = count or RowCount.exact(n)
    sampler = PoissonSampler(
        n, count.sample_rate(config.batch_size), noise.child(*config.batches_label).torch()
    )
    noise_generator = noise.child(*config.noise_label).torch()
    weights = torch.zeros(dim + 1, num_classes)
    step_size = config.lr / count.expected_batch(config.batch_size)
    for start in range(0, config.steps, SAMPLING_CHUNK_STEPS):
        for index in sampler.batches(min(SAMPLING_CHUNK_STEPS, config.steps - start)):
            batch = index[index < n]
            if layout is None:
                total = preconditioned_clipped_sum(x[batch], y[batch], weights, preconditioner(weights), clip)
            else:
                rows, person, _ = layout.drawn_rows(batch.numpy())
                total = preconditioned_person_sum(
                    x[rows],
                    y[rows],
                    weights,
                    preconditioner(weights),
                    clip,
                    torch.from_numpy(person),
                    len(batch),
                )
            if sigma > 0:  # drawn in the engine's (C, d+1) layout, so that both draw the same numbers
                total += sigma * clip * torch.randn(num_classes, dim + 1, generator=noise_generator).T
            weights -= step_size * total
    return LinearHead(weights[:-1].numpy().copy(), weights[-1].numpy().copy(), config.steps)


class AdaptivePreconditionedDPSGD(ProjectedDPSGD):
    options = AdaDPSOptions
    reads = MappingProxyType({Reads.LABELLED_PUBLIC_ROWS: "for its preconditioner"})
    cannot = MappingProxyType(
        {
            Cannot.BE_AUDITED: "its preconditioner reads public labelled rows the canaries' "
            "coordinates are not in"
        }
    )

    def __init__(self) -> None:
        super().__init__(
            "adadps",
            "AdaDPS",
            "DP-SGD on all standardised features with per-sample gradients "
            "preconditioned by RMSProp on PUBLIC LABELLED rows (AdaDPS)",
            projects=False,
            single_cell=True,
            needs_public_basis=True,
        )
        self.averages_iterates = False  # its own loop releases the last iterate
        self.person_bound = (
            "each row's preconditioned gradient clipped to C, then the sum of each person's clipped "
            "ones clipped again to C; persons, not rows, Poisson-sampled, at a rate read from the "
            "count of persons"
        )

    def train_cell(self, cell: Cell) -> list[Run]:
        data = cell.data
        train_x = project(cell.mapping, data.private_x, None)
        public_rows, public_labels = data.labelled_public
        public_x = project(cell.mapping, public_rows, None)
        runs = []
        for config in cell.configs:
            rate = cell.rows.sample_rate(config.batch_size)
            sigma = cell.noise_multiplier(rate, config.steps)
            clip = cell.privacy.clip if sigma > 0 else math.inf
            scale = public_preconditioner(public_x, public_labels, cell.options, config.seed)
            train = functools.partial(
                train_adadps,
                train_x,
                data.private_y,
                data.num_classes,
                config,
                sigma,
                clip,
                scale,
                cell.randomness,
                cell.rows,
                cell.units,
            )
            head = each_run(cell, config, train)
            event = dp_sgd_event(sigma, rate, config.steps)
            runs.append(Run(head=head, event=event, epsilon_spent=cell.spent_epsilon(event)))
        return runs

    def model_attrs(self, options: AdaDPSOptions) -> dict:
        return {
            "adadps": {
                **dataclasses.asdict(options),
                "note": "public LABELLED rows (public_labelled) set the preconditioner; not protected",
            }
        }


ADADPS = AdaptivePreconditionedDPSGD()
