"""Hyper-parameter sweeps over (method, k, ε) × (lr, steps, batch size, seed) with validation-based selection.

Every run is calibrated for its exact sample rate and step count, trained, and its spent ε recomputed from its
DP event. Selection per (method, k, ε) uses the val split's labels, which the ε does NOT account for; every
artifact that holds a selection says so. A sweep can be cut into shards (`shard=(i, n)`) whose runs are merged
and selected later from their stored run tables.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.model import RunKey, RunRecord, model_artifact
from pillar_cli.devices import resolve_device
from pillar_cli.errors import PrivacyError, UsageError
from pillar_cli.linear.engine import LinearHead, RunConfig, train_linear_heads
from pillar_cli.linear.opacus_reference import train_with_opacus
from pillar_cli.methods.selection import select_on_val
from pillar_cli.methods.gep import GepSettings, train_gep
from pillar_cli.methods.noisy_sgd import MECHANISM as NOISY_SGD_MECHANISM
from pillar_cli.methods.noisy_sgd import NoisySGDSettings, train_noisy_sgd
from pillar_cli.privacy import DPEvent, calibrate_noise, get_accountant, spent_epsilon
from pillar_cli.projection import GaussianProjection, LinearMap, PublicPCA, project

ENGINES = ("fast", "opacus")

SELECTION_NOTE = ("hyper-parameters were selected on the val split's labels; that selection is NOT accounted "
                  "in the reported ε")
METHODS = {
    "pillar": "top-k principal components of the PUBLIC features (the projection artifact)",
    "dpsgd": "no projection: DP-SGD on all standardised features (the paper's main baseline)",
    "jl": "Gaussian random projection to k dimensions (seeded; uses no data)",
    "gep": "gradient embedding perturbation: k = anchor dimension from public gradients; full feature space",
    "noisy-sgd": "theory variant (Algorithms 1-2): binary tasks, ζ-scaled hinge loss, boosted projected noisy SGD "
                 "on the top-k public components",
}
METHOD_PROJECTS = {"pillar": True, "dpsgd": False, "jl": True, "gep": False, "noisy-sgd": True}


def check_grid(grid: SweepGrid, pca: PublicPCA, num_classes: int) -> None:
    """Fail before any training if a method or k of the grid cannot work with this projection."""
    for method in grid.methods:
        mapping = linear_map(method, pca)
        for k in [k for k in grid.ks if k is not None]:
            if METHOD_PROJECTS[method]:
                mapping.basis(k)
            elif method == "gep" and k > (pca.dim + 1) * num_classes:
                raise UsageError(f"gep anchor dimension k={k} exceeds the gradient dimension {(pca.dim + 1) * num_classes}")


def linear_map(method: str, pca: PublicPCA, seed: int = 0) -> LinearMap:
    if method not in METHODS:
        raise UsageError(f"unknown method '{method}' (known: {', '.join(METHODS)})")
    return GaussianProjection(pca, seed) if method == "jl" else pca


@dataclass(frozen=True)
class SweepGrid:
    methods: list[str]
    ks: list[int | None]  # None = full dimension, no projection
    epsilons: list[float]  # math.inf = non-private
    lrs: list[float]
    steps: list[int]
    batch_sizes: list[int]
    seeds: list[int]
    momentum: float = 0.0
    weight_decay: float = 0.0
    theory_steps: tuple[int, ...] = ()  # noisy-sgd's step counts (Algorithm 1: n²); it has no lr or batch size

    def configs(self, method: str = "pillar") -> list[RunConfig]:
        if method == "noisy-sgd":  # one example per step in expectation, the step size is the schedule's
            return [RunConfig(0.0, t, 1, s) for t, s in itertools.product(self.theory_steps, self.seeds)]
        return [RunConfig(lr, t, b, s, self.momentum, self.weight_decay) for lr, t, b, s in
                itertools.product(self.lrs, self.steps, self.batch_sizes, self.seeds)]

    def cells(self) -> list[tuple[str, int | None, float]]:
        """(method, k, ε) cells; dpsgd has the single cell k = full."""
        return [(m, k, e) for m in self.methods for k in ([None] if m == "dpsgd" else self.ks) for e in self.epsilons]

    def points(self, shard: tuple[int, int] = (0, 1)) -> list[tuple[tuple[str, int | None, float], RunConfig]]:
        """Every run of the sweep, or every n-th starting at i for shard (i, n)."""
        index, count = shard
        everything = [(cell, config) for cell in self.cells() for config in self.configs(cell[0])]
        return everything[index::count]


@dataclass(frozen=True)
class PrivacySettings:
    delta: float = 1e-5
    clip: float = 1.0
    accountant: str = "prv"


@dataclass
class Run:
    key: RunKey
    event: DPEvent
    epsilon_spent: float
    head: LinearHead
    val_accuracy: float


@dataclass
class SweepResult:
    runs: list[Run] = field(default_factory=list)
    bases: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)

    @property
    def selection(self) -> list[dict]:
        return select_on_val([r.key for r in self.runs], [r.val_accuracy for r in self.runs])


@dataclass(frozen=True)
class SweepData:
    """Everything a sweep trains on. Features are raw embeddings; the public scaler is applied per method."""

    pca: PublicPCA
    private_x: np.ndarray
    private_y: np.ndarray
    val_x: np.ndarray | None  # None: no val split, allowed when each cell has a single configuration
    val_y: np.ndarray | None
    num_classes: int
    public_x: np.ndarray | None = None  # unlabelled public rows: GEP's anchor subspace
    warm_start: tuple[np.ndarray, np.ndarray] | None = None  # (W (D, C), b) in the standardised space


@dataclass(frozen=True)
class SweepOptions:
    shard: tuple[int, int] = (0, 1)
    engine: str = "fast"
    device: str = "auto"
    noisy_sgd: NoisySGDSettings = NoisySGDSettings()


def run_sweep(data: SweepData, grid: SweepGrid, privacy: PrivacySettings, options: SweepOptions = SweepOptions(),
              on_runs: Callable[[int], None] = lambda done: None) -> SweepResult:
    """Train the sweep's grid points (those of one shard) on the projected private split; score them on val."""
    if options.engine not in ENGINES:
        raise UsageError(f"unknown engine '{options.engine}' (known: {', '.join(ENGINES)})")
    resolve_device(options.device)  # before any training
    n = len(data.private_x)
    too_big = [b for b in grid.batch_sizes if b > n]
    if too_big:
        raise UsageError(f"--batch-size {too_big[0]} exceeds the {n} private rows")
    if "gep" in grid.methods and data.public_x is None:
        raise UsageError("method 'gep' needs the public split for its anchor subspace")
    by_cell: dict[tuple, list[RunConfig]] = defaultdict(list)
    for cell, config in grid.points(options.shard):
        by_cell[cell].append(config)
    result = SweepResult()
    for (method, k, epsilon), configs in by_cell.items():
        mapping = linear_map(method, data.pca)
        projected = k if METHOD_PROJECTS[method] else None
        if projected is not None:
            result.bases[(method, k)] = mapping.basis(k)
        val_z = None if data.val_x is None else project(mapping, data.val_x, projected)
        if method == "noisy-sgd":
            heads, events, spents = _train_noisy_sgd_cell(data, mapping, k, epsilon, configs, privacy, options)
        else:
            sigmas = [_noise_multiplier(epsilon, privacy, c.batch_size / n, c.steps) for c in configs]
            heads = _train_cell(data, mapping, method, k, configs, sigmas,
                                None if math.isinf(epsilon) else privacy.clip, options)
            events = [DPEvent(sigma, c.batch_size / n, c.steps, privacy.delta, privacy.clip)
                      for c, sigma in zip(configs, sigmas)]
            spents = [spent_epsilon(privacy.accountant, event) for event in events]
        for config, event, spent, head in zip(configs, events, spents, heads):
            if spent > epsilon * (1 + 1e-9):
                raise PrivacyError(f"run spent ε = {spent:.4g} above its target {epsilon:g}; refusing to write it")
            key = RunKey(method, k, epsilon, config.lr, config.steps, config.batch_size, config.seed)
            val_accuracy = math.nan if val_z is None else head.accuracy(val_z, data.val_y)
            result.runs.append(Run(key, event, spent, head, val_accuracy))
        on_runs(len(configs))
    return result


def _train_cell(data: SweepData, mapping: LinearMap, method: str, k: int | None, configs: list[RunConfig],
                sigmas: list[float], clip: float | None, options: SweepOptions) -> list[LinearHead]:
    """One (method, k, ε) cell: every configuration's head in that cell's feature space."""
    projected = k if METHOD_PROJECTS[method] else None
    train_z = project(mapping, data.private_x, projected)
    if method == "gep":
        settings = GepSettings(anchor_dim=k or 32, embedding_clip=clip or 1.0, residual_clip=(clip or 1.0) / 2)
        public_z = mapping.standardized(data.public_x)
        return [train_gep(train_z, data.private_y, public_z, data.num_classes, c, s, settings)
                for c, s in zip(configs, sigmas)]
    init = None
    if data.warm_start is not None:
        full_w, full_b = data.warm_start
        init = (full_w if projected is None else np.linalg.lstsq(mapping.basis(projected), full_w, rcond=None)[0],
                full_b)
    if options.engine == "opacus":
        return [train_with_opacus(train_z, data.private_y, data.num_classes, c, s, clip, init)
                for c, s in zip(configs, sigmas)]
    return train_linear_heads(train_z, data.private_y, data.num_classes, configs, sigmas, clip,
                              device=options.device, init=init)


def _train_noisy_sgd_cell(data: SweepData, mapping: LinearMap, k: int, epsilon: float, configs: list[RunConfig],
                          privacy: PrivacySettings, options: SweepOptions
                          ) -> tuple[list[LinearHead], list[DPEvent], list[float]]:
    train_z = project(mapping, data.private_x, k)
    trained = [train_noisy_sgd(train_z, data.private_y, c.steps, c.seed, epsilon, privacy.delta, privacy.accountant,
                               options.noisy_sgd) for c in configs]
    return [t.head for t in trained], [t.run_event for t in trained], [t.epsilon_spent for t in trained]


def _noise_multiplier(epsilon: float, privacy: PrivacySettings, rate: float, steps: int) -> float:
    if math.isinf(epsilon):
        return 0.0
    return calibrate_noise(privacy.accountant, epsilon, privacy.delta, rate, steps)


def sweep_artifact(result: SweepResult, pca: PublicPCA, privacy: PrivacySettings, num_classes: int,
                   n_private: int, shard: tuple[int, int] = (0, 1),
                   noisy_sgd: NoisySGDSettings = NoisySGDSettings()) -> Artifact:
    """Every run's head and ledger row, the bases that map heads back to the standardised space, the selection."""
    runs = result.runs
    records = [RunRecord(r.key, r.event.noise_multiplier, r.event.sample_rate, r.epsilon_spent, r.head.weights,
                         r.head.bias, r.val_accuracy) for r in runs]
    attrs = {
        "num_classes": num_classes,
        "n_private": n_private,
        "row_l2_normalised": pca.second_moment,
        "shard": list(shard),
        "feature_space": "standardised with the public mean/scale; full-space weights = bases/<method>/<k> · weights",
        "ledger": {"accountant": privacy.accountant, "delta": privacy.delta, "clip": privacy.clip,
                   "accountant_description": get_accountant(privacy.accountant).description,
                   "epsilon_is_upper_bound": get_accountant(privacy.accountant).upper_bound,
                   "mechanism": "DP-SGD, Poisson sampling, Gaussian noise σ·clip, add/remove-one adjacency",
                   "protected_split": "private", "per_run": "runs/epsilon_spent, runs/noise_multiplier, "
                   "runs/sample_rate, runs/steps"},
        "max_epsilon_spent": max((r.epsilon_spent for r in runs), default=0.0),
        **({"noisy_sgd": _noisy_sgd_ledger(noisy_sgd)} if any(r.key.method == "noisy-sgd" for r in runs) else {}),
        "selection": result.selection,
        "selection_note": SELECTION_NOTE,
    }
    return model_artifact(records, result.bases, pca.mean_, pca.scale_, attrs)


def _noisy_sgd_ledger(settings: NoisySGDSettings) -> dict:
    return {"mechanism": NOISY_SGD_MECHANISM, "zeta": settings.zeta, "beta": settings.beta,
            "boosted_runs": math.ceil(math.log(1 / settings.beta)),
            "per_run": "for noisy-sgd rows, runs/noise_multiplier, runs/sample_rate (1/n) and runs/steps describe "
                       "EACH boosted run (at δ/m); runs/epsilon_spent is the total, selection included"}
