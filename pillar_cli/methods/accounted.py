"""Accounted selection (`--select accounted`): per (method, k, ε) cell and seed, the Papernot–Steinke private
selection over the cell's configurations, so that the model's ε covers training AND the choice of the model.

A random number K of trials (privacy.rdp.TrialCount) is drawn from secret randomness, independently of the
data, and never stored (Papernot–Steinke's bounds assume K stays hidden); each trial trains a configuration
drawn uniformly from the candidates with the noise of `plan_selection` and releases its score, the number of
correct val predictions plus Gaussian noise; only the best trial's head and noisy score are kept. Nothing else
of the other trials is written: not their heads, scores, seeds, nor which trial won. With the person as the
privacy unit each val row's prediction counts 1/(its person's val rows): one person moves a score by at most
1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pillar_cli.errors import UsageError, param
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.base import Cannot, Cell, Method, Run
from pillar_cli.privacy import Event, composed, dp_sgd_event
from pillar_cli.privacy.rdp import TrialCount
from pillar_cli.privacy.relation import ROW_RELATIONS
from pillar_cli.privacy.selection import SelectionPlan, plan_selection
from pillar_cli.privacy.unit import PERSON, PrivacyUnit, Units, adjacency

SCORE = (
    "correct predictions on the val split, plus Gaussian noise (sensitivity 1 under "
    f"{adjacency(ROW_RELATIONS)})"
)
PERSON_SCORE = (
    "correct predictions on the val split, each weighted by 1/(its person's val rows), plus Gaussian noise "
    f"(sensitivity 1 under {adjacency(ROW_RELATIONS, PrivacyUnit(PERSON, 'their ids'))})"
)


@dataclass(frozen=True)
class AccountedSelection:
    """How a cell's selection is randomised and its budget split; `trials` None: as many as candidates."""

    trials: float | None = None
    # geometric: never zero trials; Poisson (inf) is ~10 % tighter but releases nothing w.p. e^-μ
    shape: float = 1.0
    score_share: float = 0.3

    def __post_init__(self) -> None:
        self.count(1)
        if not 0 < self.score_share < 1:
            raise UsageError(f"{param('score_share')} must be in (0, 1) (got {self.score_share})")

    def count(self, candidates: int) -> TrialCount:
        return TrialCount(float(candidates) if self.trials is None else self.trials, self.shape)


@dataclass(frozen=True)
class Released:
    """The best trial of one seed's selection: its candidate configuration, head and noisy val accuracy."""

    config: RunConfig
    run: Run
    score: float


def select_privately(
    method: Method, cell: Cell, val_z: np.ndarray, val_y: np.ndarray, selection: AccountedSelection
) -> tuple[list[Released], list[dict]]:
    """One accounted selection per seed among `cell.configs` (the candidates, listed once per seed): the
    released runs, and per seed the ledger's record of the selection (K = 0 under Poisson releases
    nothing)."""
    if reason := method.cannot.get(Cannot.BE_SELECTED):
        raise UsageError(f"{param('select')} accounted cannot wrap method '{method.name}': {reason}")
    by_seed: dict[int, list[RunConfig]] = {}
    for config in cell.configs:
        by_seed.setdefault(config.seed, []).append(config)
    privacy = cell.privacy
    count = selection.count(len(next(iter(by_seed.values()))))
    mechanisms = {method.mechanism(c, cell.rows) for c in cell.configs}
    epsilon, delta, prior = _budget(cell)
    plan = plan_selection(epsilon, delta, count, selection.score_share, mechanisms, prior)
    trials = {
        seed: _draw_trials(cell.randomness.child("trials", seed).numpy(), candidates, count)
        for seed, candidates in by_seed.items()
    }
    noise = plan.training
    val_units = cell.data.val_units or Units.rows(len(val_y))
    val_weights = val_units.bounded_by(privacy.unit).weights
    runs = iter(
        method.train_cell(
            replace(
                cell,
                configs=[t for drawn in trials.values() for _, t in drawn],
                noise=lambda rate, steps: noise[rate, steps],
            )
        )
    )
    released, records = [], []
    for seed, drawn in trials.items():
        scored = []
        for candidate, trial in drawn:
            run = next(runs)
            score_noise = cell.randomness.child("score", trial).numpy().standard_normal()
            scored.append(
                (
                    _noisy_accuracy(run, val_z, val_y, val_weights, plan.score_sigma, score_noise),
                    candidate,
                    run,
                )
            )
        if scored:
            score, candidate, run = max(scored, key=lambda item: item[0])
            released.append(
                Released(
                    replace(candidate, seed=seed),
                    replace(run, event=plan.event, epsilon_spent=plan.epsilon),
                    score,
                )
            )
        records.append(_record(cell, method, seed, by_seed[seed], plan, count, len(val_y)))
    return released, records


def _budget(cell: Cell) -> tuple[float, float, Event | None]:
    """(ε, δ) a cell's selection is planned at, and the Gaussian releases it composes with: those of what its
    heads rest on (the count they read, upstream Gaussian releases) at δ_total, a pure-ε upstream release
    taken off ε."""
    if cell.guarantee is None:
        return cell.epsilon, cell.privacy.delta, None
    segments, pure = cell.guarantee.fixed()
    cell.guarantee.own_budget(cell.epsilon)  # refuses where the upstream releases leave nothing
    prior = composed(*(dp_sgd_event(*segment) for segment in segments)) if segments else None
    return cell.epsilon - pure, cell.guarantee.delta_total, prior


def _draw_trials(rng: np.random.Generator, candidates: list[RunConfig], count: TrialCount) -> list[tuple]:
    """K trials, each a uniformly drawn candidate relabelled with a seed of its own (a label that keeps trials
    of the same candidate apart when noise is seeded for an experiment); `rng` is secret: K and the picks are
    never stored."""
    picks = rng.integers(len(candidates), size=count.draw(rng))
    return [(candidates[p], replace(candidates[p], seed=int(rng.integers(2**31 - 1)))) for p in picks]


def _noisy_accuracy(
    run: Run,
    val_z: np.ndarray,
    val_y: np.ndarray,
    val_weights: np.ndarray,
    score_sigma: float,
    standard_normal: float,
) -> float:
    """The weighted count of correct val predictions plus noise, over the weights' sum (val rows, or
    persons)."""
    correct = float(val_weights @ (run.head.logits(val_z).argmax(axis=1) == val_y))
    return (correct + score_sigma * standard_normal) / float(val_weights.sum())


def _record(
    cell: Cell,
    method: Method,
    seed: int,
    candidates: list[RunConfig],
    plan: SelectionPlan,
    count: TrialCount,
    n_val: int,
) -> dict:
    """The selection: its DP event tree, enough to recompute its ε from the artifact alone, and its candidates
    and score for people; the number of trials drawn is not among them: the theorems hold only while K stays
    hidden."""
    configurations = [
        {"lr": config.lr, "steps": config.steps, "batch_size": config.batch_size, "ridge": config.ridge}
        for config in candidates
    ]
    return {
        "method": method.name,
        "k": "full" if cell.k is None else cell.k,
        "epsilon_target": cell.epsilon,
        "seed": seed,
        "trial_count": count.to_dict(),
        "trial": {
            "training": "one candidate drawn uniformly; its RDP is at most the largest candidate "
            "mechanism's (the one-of node of `event`)",
            "candidates": configurations,
            "score": {"statistic": PERSON_SCORE if cell.privacy.unit.is_person else SCORE, "n_val": n_val},
        },
        "event": cell.compose(plan.event).to_dict(),
        "trial_training_epsilon": plan.training_epsilon,
        "score_share_order": plan.reference_order,
        "epsilon": cell.spent_epsilon(plan.event) if cell.guarantee else plan.epsilon,
        "delta": cell.privacy.delta if cell.guarantee is None else cell.guarantee.delta_total,
    }
