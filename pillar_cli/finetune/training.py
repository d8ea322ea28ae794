"""DP-SGD on every parameter of a torch network, through opacus.

Poisson batches come from opacus' `DPDataLoader` (seeded), logical batches are split into physical ones of at
most `max_physical_batch` rows by `BatchMemoryManager` so memory stays bounded whatever the sampling rate, and
per-sample clipping runs either through opacus' hooks (`GradSampleModule`: per-sample gradients materialised)
or its ghost clipping (`GradSampleModuleFastGradientClipping`: per-sample norms without the gradients, a
second backward pass). The sampling rate B/ñ and the expected batch read the row count ñ released before
training (privacy/count.py), the noise multiplier is calibrated by pillar's accountant for that rate, the
steps and the count's release together, and the ε returned is recomputed from the run's DP event tree, as for
every linear head.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pillar_cli.embedding.networks import NetworkSpec, build_network
from pillar_cli.embedding.weights import load_weights_file
from pillar_cli.errors import DataError, UsageError, check_positive, param
from pillar_cli.lazy import torch
from pillar_cli.privacy import Event, calibrate_noise, dp_sgd_event, spent_epsilon, validate_budget
from pillar_cli.privacy.count import RowCount, count_for
from pillar_cli.randomness import SECRET, NoiseSource

MODES = ("hooks", "ghost")


@dataclass(frozen=True)
class FinetuneConfig:
    epsilon: float
    delta: float = 1e-5
    steps: int = 100
    lr: float = 0.5
    batch_size: int = 256  # expected (Poisson) logical batch
    clip: float = 1.0  # math.inf: no clipping (a test of the path, never private)
    momentum: float = 0.0
    seed: int = 0
    accountant: str = "prv"
    grad_sample_mode: str = "hooks"
    max_physical_batch: int = 128
    # batches and noise (seeded only for experiments: NOT DP); `seed` sets the init
    noise: NoiseSource = SECRET
    n_public: bool = False  # the number of training rows is public knowledge: read exactly, no noisy count


@dataclass
class FinetuneResult:
    model: torch.nn.Module
    event: Event  # the training's DP event tree (the count's release, if it read one, is `count`'s)
    epsilon_spent: float  # of the training and the count's release together
    steps_run: int
    count: RowCount


def finetune(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: np.ndarray,
    config: FinetuneConfig,
    device: str = "cpu",
    on_step: Callable[[int], None] | None = None,
    count: RowCount | None = None,
) -> FinetuneResult:
    """Train every parameter of `model` (in place) with DP-SGD on (images, labels); `count`: the row count
    already released for this training (None: released here for this run alone)."""
    from opacus.data_loader import DPDataLoader
    from opacus.utils.batch_memory_manager import BatchMemoryManager

    _check_budget(config)
    count = count or count_for(len(labels), [config.epsilon], config.delta, config.noise, config.n_public)
    sigma = _check(model, images, labels, config, count)
    rate = count.sample_rate(config.batch_size)
    dataset = torch.utils.data.TensorDataset(images, torch.as_tensor(labels, dtype=torch.int64))
    loader = DPDataLoader(dataset, sample_rate=rate)
    # The batches are drawn by the sampler alone, from a generator of its own: the DataLoader would otherwise
    # draw its workers' base seed from the same generator, and the batches would depend on loader internals.
    loader.batch_sampler.generator = config.noise.child("batches", config.seed, config.epsilon).torch()
    module, optimizer, criterion = _private(
        model.to(device), config, sigma, count.expected_batch(config.batch_size)
    )
    steps_run = 0
    with (
        warnings.catch_warnings(),
        BatchMemoryManager(
            data_loader=loader, optimizer=optimizer, max_physical_batch_size=config.max_physical_batch
        ) as batches,
    ):
        warnings.simplefilter("ignore")  # opacus warns about secure RNG and empty batches on every run
        while steps_run < config.steps:
            for inputs, targets in batches:
                optimizer.zero_grad(set_to_none=True)
                criterion(module(inputs.to(device)), targets.to(device)).backward()
                optimizer.step()
                if not optimizer._is_last_step_skipped:
                    steps_run += 1
                    if on_step is not None:
                        on_step(1)
                if steps_run == config.steps:
                    break
    event = dp_sgd_event(sigma, rate, config.steps)
    epsilon = spent_epsilon(config.accountant, count.with_count(event), config.delta)
    return FinetuneResult(
        module.to_standard_module() if hasattr(module, "to_standard_module") else model,
        event,
        epsilon,
        steps_run,
        count,
    )


def _check_budget(config: FinetuneConfig) -> None:
    """ε and δ usable before the count is released (ε = inf: no privacy, nothing to check)."""
    if math.isfinite(config.epsilon) or not config.epsilon > 0:
        validate_budget(config.epsilon, config.delta)


def _check(
    model: torch.nn.Module, images: torch.Tensor, labels: np.ndarray, config: FinetuneConfig, count: RowCount
) -> float:
    """Refuse what cannot train, before any private row is read; σ for the run (0 without privacy)."""
    if math.isfinite(config.epsilon):
        validate_budget(config.epsilon, config.delta, count)
    for name in ("lr", "steps", "batch_size", "max_physical_batch"):
        check_positive(name, getattr(config, name))
    if not config.clip > 0:
        raise UsageError(f"{param('clip')} must be positive (got {config.clip})")
    if config.grad_sample_mode not in MODES:
        raise UsageError(
            f"unknown {param('grad_sample_mode')} '{config.grad_sample_mode}' (known: hooks, ghost)"
        )
    if math.isinf(config.clip) and math.isfinite(config.epsilon):
        raise UsageError(
            f"{param('clip')} inf leaves the sensitivity unbounded: only non-private runs may skip it"
        )
    try:
        with torch.no_grad():
            out = model.eval()(images[:2])
    except RuntimeError as err:
        raise DataError(
            f"the network cannot take images of shape {tuple(images.shape[1:])}: {err}".splitlines()[0],
            hint=f"embed the images at a size the network accepts (embed's {param('resize')})",
        ) from None
    if out.ndim != 2 or out.shape[1] <= int(labels.max()):
        raise DataError(
            f"the network outputs {tuple(out.shape[1:])} per image; the labels need "
            f"{int(labels.max()) + 1} classes"
        )
    if math.isinf(config.epsilon):
        return 0.0
    return calibrate_noise(
        config.accountant,
        config.epsilon,
        config.delta,
        count.sample_rate(config.batch_size),
        config.steps,
        fixed=count.segments,
    )


def _private(model: torch.nn.Module, config: FinetuneConfig, sigma: float, expected_batch: float):
    """(module, optimizer, criterion) wrapped by opacus for the chosen clipping mode; the noisy gradient sums
    are divided by `expected_batch` (q·ñ)."""
    from opacus import GradSampleModule
    from opacus.grad_sample import GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

    model.train()
    sgd = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    noise = config.noise.child("noise", config.seed, config.epsilon).torch()
    clip = 1e30 if math.isinf(config.clip) else config.clip
    options = {
        "noise_multiplier": sigma,
        "max_grad_norm": clip,
        "expected_batch_size": expected_batch,
        "generator": noise,
        "loss_reduction": "mean",
    }
    if config.grad_sample_mode == "hooks":
        return GradSampleModule(model), DPOptimizer(sgd, **options), torch.nn.CrossEntropyLoss()
    module = GradSampleModuleFastGradientClipping(model, max_grad_norm=clip, use_ghost_clipping=True)
    optimizer = DPOptimizerFastGradientClipping(sgd, **options)
    return module, optimizer, DPLossFastGradientClipping(module, optimizer, torch.nn.CrossEntropyLoss())


def network(spec: NetworkSpec, seed: int = 0, weights: Path | None = None) -> torch.nn.Module:
    """The network of `spec`, randomly initialised (seeded) or from a checkpoint of the same network (a state
    dict saved with torch.save; publishers' prefixes such as `module.` are stripped)."""
    model = build_network(spec, seed)
    if weights is not None:
        try:
            load_weights_file(model, weights)
        except RuntimeError as err:
            raise DataError(
                f"checkpoint {weights} does not fit network '{spec.architecture}': {str(err).splitlines()[0]}"
            ) from None
    return model
