"""Private selection: planning the noise of running a random number of DP trials and releasing only the best
one (Papernot & Steinke, "Hyperparameter tuning with Rényi differential privacy", ICLR 2022; the bounds are in
rdp.py).

A trial trains one configuration drawn uniformly from the candidates, independently of the data, then releases
its noisy val score: its RDP is at most the largest of the candidates' training RDP (pointwise over orders)
plus the score's Gaussian RDP. `plan_selection` spreads a total (ε, δ) over one trial's training and score
noise, and returns the selection as a DP event tree.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import UsageError, param
from pillar_cli.privacy.calibration import calibrate, solve_noise
from pillar_cli.privacy.events import (
    Event,
    GaussianEvent,
    OneOfEvent,
    RepeatAndSelectEvent,
    composed,
    dp_sgd_event,
    event_from_dict,
    pure_parts,
)
from pillar_cli.privacy.rdp import ORDERS, TrialCount, epsilon_of, event_rdp, subsampled_gaussian_rdp

# (sample rate, steps) of a candidate's training; (1.0, 1): one Gaussian release
Mechanism = tuple[float, int]


def selection_event(training: dict[Mechanism, float], score_sigma: float, count: TrialCount) -> Event:
    """The selection as a DP event: repeat-and-select of one trial, which trains one candidate mechanism (σ by
    (sample rate, steps)) and releases a Gaussian score."""
    candidates = OneOfEvent(
        tuple(dp_sgd_event(sigma, rate, steps) for (rate, steps), sigma in sorted(training.items()))
    )
    return RepeatAndSelectEvent(composed(candidates, GaussianEvent(score_sigma)), count.mean, count.shape)


def recorded_selection_epsilon(record: dict) -> float:
    """ε of a selection recomputed from its ledger record alone (its event tree and δ; a pure-ε release it
    rests on adds its ε)."""
    pure, rest = pure_parts(event_from_dict(record["event"]))
    at = float(record["delta"])
    return pure if rest is None else pure + epsilon_of(event_rdp(rest), at)


@dataclass(frozen=True)
class SelectionPlan:
    """The noise of one trial: training σ per candidate mechanism and the score's σ (in correct-count units);
    the selection's event (without the released row count it read) and its total ε (with it), one trial's
    training ε at δ alone, and the order at which the score's share was set."""

    training: dict[Mechanism, float]
    score_sigma: float
    event: Event
    epsilon: float
    training_epsilon: float
    reference_order: float


def plan_selection(
    epsilon: float,
    delta: float,
    count: TrialCount,
    score_share: float,
    mechanisms: set[Mechanism],
    released: Event | None = None,
) -> SelectionPlan:
    """See `_plan`; planned once per process for the same arguments."""
    return _plan(epsilon, delta, count, score_share, frozenset(mechanisms), released)


@functools.lru_cache(maxsize=256)
def _plan(
    epsilon: float,
    delta: float,
    count: TrialCount,
    score_share: float,
    mechanisms: frozenset[Mechanism],
    released: Event | None,
) -> SelectionPlan:
    """Noise such that the selection's total ε at δ, composed with the `released` event it rests on (a noisy
    row count), is at most (and within 1 % of) `epsilon`. One trial's training is calibrated to ε_t at δ; its
    score's Gaussian RDP is set to `score_share` of the trial's RDP at the order that converts the training's
    RDP best (Gaussian RDP is linear in the order, so a share of its slope). ε_t is searched so that the
    selection's bound meets the budget, and cached on disk."""
    if not 0 < score_share < 1:
        raise UsageError(f"{param('score_share')} must be in (0, 1) (got {score_share})")
    ordered = sorted(mechanisms)

    def plan(trial_epsilon: float, final: bool = False) -> SelectionPlan:
        training = {m: _trial_noise(m, trial_epsilon, delta, cached=final) for m in ordered}
        trial = np.max(
            [subsampled_gaussian_rdp(sigma, rate, steps) for (rate, steps), sigma in training.items()], axis=0
        )
        order = _best_order(trial, delta)
        slope = score_share / (1 - score_share) * float(np.interp(order, ORDERS, trial)) / order
        score_sigma = 1 / math.sqrt(2 * slope)
        event = selection_event(training, score_sigma, count)
        total = event if released is None else composed(released, event)
        return SelectionPlan(
            training, score_sigma, event, epsilon_of(event_rdp(total), delta), trial_epsilon, order
        )

    key = f"select-v1|{epsilon!r}|{delta!r}|{count.mean!r}|{count.shape!r}|{score_share!r}|{ordered!r}" + (
        "" if released is None else f"|{released!r}"
    )
    inverse = calibrate(lambda tau: plan(1 / tau).epsilon, epsilon, key, lambda goal: 3 / goal)
    return plan(1 / inverse, final=True)


def _best_order(rdp: np.ndarray, delta: float) -> float:
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    return float(compute_epsilon(ORDERS, rdp, delta)[1])


def _trial_noise(mechanism: Mechanism, epsilon: float, delta: float, cached: bool) -> float:
    """σ of one trial's training at ε (RDP at ORDERS, converted at δ); the plan's final values are cached on
    disk (the search's intermediate ones are not: the same deterministic solve gives the same σ)."""
    rate, steps = mechanism

    def eps_of(sigma: float) -> float:
        return epsilon_of(subsampled_gaussian_rdp(sigma, rate, steps), delta)

    def guess(goal: float) -> float:
        return max(rate * math.sqrt(2 * steps * math.log(1 / delta)) / goal, 0.5)

    if cached:
        return calibrate(eps_of, epsilon, f"select-trial-v1|{epsilon!r}|{delta!r}|{rate!r}|{steps}", guess)
    return solve_noise(eps_of, epsilon, guess)
