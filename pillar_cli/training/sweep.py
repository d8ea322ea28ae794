"""Hyper-parameter sweeps over (k, ε) × (lr, steps, batch size, seed) with validation-based selection.

Every run is calibrated for its exact sample rate and step count, trained, and its spent ε recomputed from its
DP event. Selection per (k, ε) uses the val split's labels, which the ε does NOT account for; the sweep result
says so wherever it is written.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.errors import PrivacyError, UsageError
from pillar_cli.privacy import DPEvent, calibrate_noise, spent_epsilon
from pillar_cli.projection import PublicPCA
from pillar_cli.training.engine import LinearHead, RunConfig, train_linear_heads

SELECTION_NOTE = ("hyper-parameters were selected on the val split's labels; that selection is NOT accounted "
                  "in the reported ε")


@dataclass(frozen=True)
class SweepGrid:
    ks: list[int | None]  # None = full dimension, no projection
    epsilons: list[float]  # math.inf = non-private
    lrs: list[float]
    steps: list[int]
    batch_sizes: list[int]
    seeds: list[int]

    def configs(self) -> list[RunConfig]:
        return [RunConfig(lr, t, b, s) for lr, t, b, s in
                itertools.product(self.lrs, self.steps, self.batch_sizes, self.seeds)]


@dataclass(frozen=True)
class PrivacySettings:
    delta: float = 1e-5
    clip: float = 1.0
    accountant: str = "prv"


@dataclass
class Run:
    k: int | None
    epsilon: float
    config: RunConfig
    event: DPEvent
    epsilon_spent: float
    head: LinearHead
    val_accuracy: float


@dataclass
class SweepResult:
    runs: list[Run] = field(default_factory=list)
    selection: list[dict] = field(default_factory=list)


def run_sweep(pca: PublicPCA, private_x: np.ndarray, private_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
              num_classes: int, grid: SweepGrid, privacy: PrivacySettings, *, device: str = "cpu",
              on_step: Callable[[int], None] = lambda t: None) -> SweepResult:
    """Train every grid point on the projected private split; select per (k, ε) on val."""
    n = len(private_x)
    too_big = [b for b in grid.batch_sizes if b > n]
    if too_big:
        raise UsageError(f"--batch-size {too_big[0]} exceeds the {n} private rows")
    result = SweepResult()
    for k in grid.ks:
        train_z, val_z = pca.transform(private_x, k), pca.transform(val_x, k)
        for epsilon in grid.epsilons:
            configs = grid.configs()
            sigmas = [_noise_multiplier(epsilon, privacy, c.batch_size / n, c.steps) for c in configs]
            heads = train_linear_heads(train_z, private_y, num_classes, configs, sigmas,
                                       None if math.isinf(epsilon) else privacy.clip, device=device, on_step=on_step)
            for config, sigma, head in zip(configs, sigmas, heads):
                event = DPEvent(sigma, config.batch_size / n, config.steps, privacy.delta, privacy.clip)
                spent = spent_epsilon(privacy.accountant, event)
                if spent > epsilon * (1 + 1e-9):
                    raise PrivacyError(f"run spent ε = {spent:.4g} above its target {epsilon:g}; refusing to write it")
                result.runs.append(Run(k, epsilon, config, event, spent, head, head.accuracy(val_z, val_y)))
    result.selection = select_on_val(result.runs)
    return result


def _noise_multiplier(epsilon: float, privacy: PrivacySettings, rate: float, steps: int) -> float:
    if math.isinf(epsilon):
        return 0.0
    return calibrate_noise(privacy.accountant, epsilon, privacy.delta, rate, steps)


def select_on_val(runs: list[Run]) -> list[dict]:
    """Per (k, ε): the (lr, steps, batch) whose mean val accuracy over seeds is highest."""
    groups: dict[tuple, dict[tuple, list[int]]] = defaultdict(lambda: defaultdict(list))
    for run_id, run in enumerate(runs):
        c = run.config
        groups[(run.k, run.epsilon)][(c.lr, c.steps, c.batch_size)].append(run_id)
    selection = []
    for (k, epsilon), by_config in groups.items():
        means = {key: float(np.mean([runs[i].val_accuracy for i in ids])) for key, ids in by_config.items()}
        best = max(means, key=lambda key: (means[key], -key[1]))
        lr, steps, batch = best
        selection.append({"k": "full" if k is None else k, "epsilon": epsilon, "lr": lr, "steps": steps,
                          "batch_size": batch, "run_ids": by_config[best], "val_accuracy_mean": means[best]})
    return selection


def model_artifact(result: SweepResult, pca: PublicPCA, privacy: PrivacySettings, num_classes: int,
                   n_private: int) -> Artifact:
    """Every run's head and ledger row, plus the selected heads mapped back to the standardised full space."""
    runs = result.runs
    dim = pca.dim
    arrays: dict[str, np.ndarray] = {
        "mean": pca.mean_.astype(np.float32),
        "scale": pca.scale_.astype(np.float32),
        "runs/k": np.array([dim if r.k is None else r.k for r in runs], dtype=np.int64),
        "runs/projected": np.array([r.k is not None for r in runs]),
        "runs/epsilon_target": np.array([r.epsilon for r in runs]),
        "runs/epsilon_spent": np.array([r.epsilon_spent for r in runs]),
        "runs/noise_multiplier": np.array([r.event.noise_multiplier for r in runs]),
        "runs/sample_rate": np.array([r.event.sample_rate for r in runs]),
        "runs/steps": np.array([r.config.steps for r in runs], dtype=np.int64),
        "runs/batch_size": np.array([r.config.batch_size for r in runs], dtype=np.int64),
        "runs/lr": np.array([r.config.lr for r in runs]),
        "runs/seed": np.array([r.config.seed for r in runs], dtype=np.int64),
        "runs/val_accuracy": np.array([r.val_accuracy for r in runs]),
    }
    for run_id, run in enumerate(runs):
        arrays[f"runs/{run_id}/weights"] = run.head.weights.astype(np.float32)
        arrays[f"runs/{run_id}/bias"] = run.head.bias.astype(np.float32)
    for choice in result.selection:
        for run_id in choice["run_ids"]:
            run = runs[run_id]
            full = run.head.weights if run.k is None else pca.basis(run.k) @ run.head.weights
            arrays[f"runs/{run_id}/weights_full"] = full.astype(np.float32)
    attrs = {
        "num_classes": num_classes,
        "n_private": n_private,
        "feature_space": "standardised with the projection's public mean/scale; weights_full = A_k · weights",
        "ledger": {"accountant": privacy.accountant, "delta": privacy.delta, "clip": privacy.clip,
                   "mechanism": "DP-SGD, Poisson sampling, Gaussian noise σ·clip, add/remove-one adjacency",
                   "protected_split": "private", "per_run": "runs/epsilon_spent, runs/noise_multiplier, "
                   "runs/sample_rate, runs/steps"},
        "max_epsilon_spent": max((r.epsilon_spent for r in runs), default=0.0),
        "selection": result.selection,
        "selection_note": SELECTION_NOTE,
    }
    return Artifact("model", arrays, attrs)
