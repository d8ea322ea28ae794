"""The white-box audit: an attacker who holds the model file, all of it, not only one head's weights.

The configuration is trained at every ε of the list, with the one-run audit's canaries among the private rows,
into the model file that train-private writes for such a grid (the same cells, the same noise source), and the
attacker reads that file: every head, the seeds, the counts, the ledger, where the noise came from. It then
tries, each as a fixed scoring rule of canary j (the margin of its label in the weights of its own
coordinate):

- `head`: each head as written (the black-box audit's attacker);
- `regenerate`: for every seed the file records (the noise seed of an experiment, and every run seed, in case
  the noise were derived from it) and every head, the head with the noise that seed would have drawn taken
  out: plain SGD adds −(lr/B)·σC·Σ_t z_t to the weights, so an exact regeneration leaves the noise-free head;
- `cancel`: for two heads of the same seed, batch size and steps, W_a·B/(lr_a σ_a C) − W_b·B/(lr_b σ_b C), in
  which a noise draw shared by both (only rescaled) cancels, leaving the difference of their gradient sums.

Every rule guesses as the one-run audit does; the bound is taken at confidence 1 − (1 − c)/A over the A rules
(Bonferroni), so every ε_lb holds at once. Each is compared with the ε its heads claim, as their ledgers state
it (a head's own ε; two heads: their joint ε, privacy.file_guarantee), whatever the file says about its noise.

`SharedNoise` plants the bug the cancellation rule looks for (tests of the audit's power only): a secret seed,
not recorded, from which every head's noise stream starts, so that heads of one seed and batch size draw the
same normals.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.model import RunKey, RunRecord, model_artifact, run_rows
from pillar_cli.artifacts.model_record import ModelLedger, ModelRecord
from pillar_cli.audit.bound import epsilon_lower_bound
from pillar_cli.audit.canaries import CANARY_KIND, AuditSettings, Canaries, correct_guesses
from pillar_cli.errors import UsageError
from pillar_cli.lazy import torch
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.base import Cannot, Cell, Method
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.methods.plan import guarantee_of
from pillar_cli.privacy import event_from_dict, validate_budget
from pillar_cli.privacy.file_guarantee import ReleasedHead, joint_epsilon, whole_file
from pillar_cli.randomness import SECRET, NoiseSource


@dataclass(frozen=True)
class Attack:
    name: str
    correct: int
    epsilon_lower_bound: float
    epsilon_claimed: float  # what the heads it reads claim together

    @property
    def breaks(self) -> bool:
        return self.epsilon_lower_bound > self.epsilon_claimed


@dataclass(frozen=True)
class WhiteBoxResult:
    attacks: list[Attack]
    included: np.ndarray  # the auditor's canaries: who was in, their labels, the strongest rule's scores
    labels: np.ndarray
    scores: np.ndarray
    guesses: int
    epsilon_claimed: float  # the ε its heads' ledgers give all of them together, had their noise been secret
    delta_claimed: float
    reproducible: bool  # the file says its noise is reproducible: it claims no guarantee at all

    @property
    def strongest(self) -> Attack:
        return max(self.attacks, key=_ratio)


def _ratio(attack: Attack) -> float:
    return attack.epsilon_lower_bound / attack.epsilon_claimed


def run_white_box_audit(
    method: Method,
    data: SweepData,
    k: int | None,
    epsilons: list[float],
    configs: list[RunConfig],
    privacy: PrivacySettings,
    settings: AuditSettings,
    options: Any = None,
) -> WhiteBoxResult:
    """Train the configurations at every ε with canaries into one model file, attack the file, bound ε;
    `options`: the method's options (None: its defaults)."""
    if not method.can(Cannot.BE_AUDITED) or method.normalises_rows or not method.averages_iterates:
        raise UsageError(
            f"the white-box audit attacks DP-SGD heads on unnormalised rows; not method '{method.name}'"
        )
    for epsilon in epsilons:
        validate_budget(epsilon, privacy.delta, len(data.private_x))
    if k is not None and method.projects:  # before the canaries widen the rows
        method.check_k(k, data.pca, data.num_classes)
    canaries = Canaries.plant(method, data, k, settings)
    model = _model_file(
        method,
        canaries,
        epsilons,
        [canaries.scaled(config, privacy.unit) for config in configs],
        privacy,
        method.options_or_defaults(options),
    )
    rules = list(_attacks(model, canaries))
    level = 1 - (1 - settings.confidence) / len(rules)
    released, attacks, scored = _released(model), [], []
    for name, heads, scores in rules:
        correct = correct_guesses(scores, canaries.included, settings.per_side)
        bound = epsilon_lower_bound(settings.canaries, 2 * settings.per_side, correct, privacy.delta, level)
        claimed = (
            released[heads[0]].epsilon
            if len(heads) == 1
            else joint_epsilon([released[i] for i in heads], privacy.delta)["epsilon"]
        )
        attacks.append(Attack(name, correct, bound, claimed))
        scored.append(scores)
    claim = joint_epsilon(released, privacy.delta)
    _, scores = max(zip(attacks, scored), key=lambda pair: _ratio(pair[0]))
    return WhiteBoxResult(
        attacks,
        canaries.included,
        canaries.labels,
        scores,
        2 * settings.per_side,
        claim["epsilon"],
        claim["delta"],
        privacy.noise.reproducible,
    )


def white_box_artifact(result: WhiteBoxResult, settings: AuditSettings, configuration: dict) -> Artifact:
    """The audit artifact: the strongest rule's guesses and bound in the audit's fields, every rule listed."""
    strongest = result.strongest
    attrs = {
        "canaries": settings.canaries,
        "guesses": result.guesses,
        "correct": strongest.correct,
        "confidence": settings.confidence,
        "epsilon_lower_bound": strongest.epsilon_lower_bound,
        "epsilon_claimed": strongest.epsilon_claimed,
        "ratio": strongest.epsilon_lower_bound / strongest.epsilon_claimed,
        "configuration": configuration,
        "canary_kind": CANARY_KIND,
        "bound": "Steinke, Nasr & Jagielski (NeurIPS 2023), Theorem 5.2, δ included; Bonferroni over the "
        "rules",
        "white_box": {
            "attacks": [vars(attack) | {"breaks": attack.breaks} for attack in result.attacks],
            "strongest": strongest.name,
            "epsilon_all_heads": result.epsilon_claimed,
            "delta_all_heads": result.delta_claimed,
            "noise_reproducible": result.reproducible,
        },
        "planted_bug": configuration.get("plant", "none"),
    }
    arrays = {
        "canaries/included": result.included,
        "canaries/labels": result.labels.astype(np.int64),
        "canaries/scores": result.scores,
    }
    return Artifact("audit", arrays, attrs)


def _model_file(
    method: Method,
    canaries: Canaries,
    epsilons: list[float],
    configs: list[RunConfig],
    privacy: PrivacySettings,
    options: Any,
) -> Artifact:
    """What train-private writes for these cells: every head, its hyper-parameters and ledger, n, the
    noise."""
    records, heads, width = [], [], canaries.mapping.width()
    for epsilon in epsilons:
        cell = Cell(canaries.data, canaries.mapping, width, epsilon, configs, privacy, "fast", "cpu", options)
        for config, run in zip(configs, method.train_cell(cell)):
            key = RunKey.of(method.name, width, epsilon, config)
            records.append(
                RunRecord(
                    key=key,
                    event=run.event.to_dict(),
                    epsilon_spent=run.epsilon_spent,
                    val_accuracy=np.nan,
                    steps_run=run.head.steps_run,
                    weights=run.head.weights,
                    bias=run.head.bias,
                    **RunRecord.headline_of(run.event),
                )
            )
            heads.append(
                ReleasedHead(
                    run.event,
                    run.epsilon_spent,
                    run.batches and (width, epsilon, *run.batches),
                    delta=privacy.delta,
                )
            )
    record = ModelRecord(
        num_classes=canaries.data.num_classes,
        n_private=len(canaries.data.private_x),
        guarantee=guarantee_of(privacy.unit, privacy.accountant, privacy.delta),
        ledger=ModelLedger(clip=privacy.clip),
        selection_note="",
        noise=privacy.noise.describe(),
        whole_file=whole_file(heads, privacy.delta, privacy.noise.reproducible),
    )
    return model_artifact(records, {}, np.zeros(width, np.float32), np.ones(width, np.float32), record)


class SharedNoise(NoiseSource):
    """A planted bug: one secret seed, not recorded, shared by every head's noise stream (and batches)."""

    def __init__(self) -> None:
        super().__init__(secrets.randbits(63))

    @property
    def reproducible(self) -> bool:
        return False  # as the file tells it: no seed is recorded

    def child(self, *labels: object) -> NoiseSource:
        return self

    def describe(self) -> dict:
        return {**SECRET.describe(), "planted": "one noise stream shared by every head (an audit test)"}


def _released(model: Artifact) -> list[ReleasedHead]:
    """The file's heads as its ledger states them: one Poisson batch sequence per (seed, batch size)."""
    return [
        ReleasedHead(event_from_dict(run["event"]), run["spent"], (run["seed"], run["batch_size"]))
        for run in _heads(model)
    ]


def _attacks(model: Artifact, canaries: Canaries):
    """(rule name, the heads it reads, canary scores) for every rule, reading the model file only (and the
    auditor's own canaries)."""
    runs = _heads(model)
    for i, run in enumerate(runs):
        yield f"head {_name(run)}", [i], _margins(run["weights"], canaries)
    recorded = ModelRecord.of(model).noise.get("noise_seed")
    seeds = sorted({run["seed"] for run in runs} | ({recorded} if recorded is not None else set()))
    for seed, (i, run) in itertools.product(seeds, enumerate(runs)):
        yield f"regenerate seed {seed} {_name(run)}", [i], _margins(_denoised(run, seed, model), canaries)
    by_noise = sorted(range(len(runs)), key=lambda i: runs[i]["sigma"])
    for i, j in itertools.combinations(by_noise, 2):
        a, b = runs[i], runs[j]
        if (a["seed"], a["batch_size"], a["steps"]) == (b["seed"], b["batch_size"], b["steps"]):
            yield (
                f"cancel {_name(a)} − {_name(b)}",
                [i, j],
                _margins(_unit_noise(a, model) - _unit_noise(b, model), canaries),
            )


def _name(run: dict) -> str:
    return f"(ε={run['epsilon']:g}, lr={run['lr']:g})"


def _heads(model: Artifact) -> list[dict]:
    """Each head as the attacks read it: its run's row and its weights."""
    return [
        {
            "epsilon": row.key.epsilon,
            "spent": row.epsilon_spent,
            "sigma": row.noise_multiplier,
            "rate": row.sample_rate,
            "lr": row.key.lr,
            "steps": row.key.steps,
            "batch_size": row.key.batch_size,
            "seed": row.key.seed,
            "k": row.key.k,
            "event": row.event,
            "weights": row.weights.astype(np.float64),
        }
        for row in run_rows(model)
    ]


def _step(run: dict, model: Artifact) -> float:
    """lr / B: the factor of a step's noisy gradient sum in the update (B the expected batch q·n)."""
    return run["lr"] / (run["rate"] * ModelRecord.of(model).n_private)


def _denoised(run: dict, seed: int, model: Artifact) -> np.ndarray:
    """The weights with the noise that a source seeded with `seed` would have drawn for this head removed."""
    source = NoiseSource(seed).child(run["k"], run["epsilon"])
    config = RunConfig(run["lr"], run["steps"], run["batch_size"], run["seed"])
    generator = source.child(*config.noise_label).torch()
    weights = run["weights"]
    draws = torch.zeros(weights.shape[1], weights.shape[0] + 1, dtype=torch.float64)
    for _ in range(run["steps"]):
        draws += torch.randn(draws.shape, generator=generator)
    noise = _step(run, model) * run["sigma"] * ModelRecord.of(model).ledger.clip * draws[:, :-1].T.numpy()
    return weights + noise


def _unit_noise(run: dict, model: Artifact) -> np.ndarray:
    """−(gradient sum)/(σC) − Σz: the weights in units of the head's own noise."""
    return run["weights"] / (_step(run, model) * run["sigma"] * ModelRecord.of(model).ledger.clip)


def _margins(weights: np.ndarray, canaries: Canaries) -> np.ndarray:
    """Canary j's score: in the weights of its own coordinate, its label's weight above the mean of all
    labels."""
    m = len(canaries.labels)
    rows = weights[-m:]  # the canaries' coordinates come last
    return rows[np.arange(m), canaries.labels] - rows.mean(axis=1)
