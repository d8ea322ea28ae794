"""Private selection: the privacy of running a random number of DP trials and releasing only the best one
(Papernot & Steinke, "Hyperparameter tuning with Rényi differential privacy", ICLR 2022).

K, the number of trials, is drawn independently of the data from a truncated negative binomial distribution of
shape η > 0 (η = 1: geometric) or a Poisson distribution (η = ∞). If one trial is (λ, ε_λ)-RDP at every order λ,
releasing the best of K trials is RDP with, at order λ,
- Poisson (Theorem 6): ε_λ + μ·δ̂ + log(μ)/(λ − 1), where δ̂ is the trial's δ at ε̂ = log(1 + 1/(λ − 1));
- truncated negative binomial (Theorem 2): ε_λ + (1 + η)(1 − 1/λ̂)ε_λ̂ + (1 + η)·log(1/γ)/λ̂ + log(μ)/(λ − 1),
  minimised over λ̂; γ is the distribution's parameter for mean μ.
A trial trains one configuration drawn uniformly from the candidates, independently of the data, then releases its
noisy val score: its RDP is at most the largest of the candidates' training RDP (pointwise over orders) plus the
score's Gaussian RDP. `plan_selection` spreads a total (ε, δ) over one trial's training and score noise.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import UsageError, param
from pillar_cli.privacy.calibration import calibrate, solve_noise

# 64 orders: opacus' series costs ~0.1 ms per order and the search below evaluates thousands of curves; the optimum
# for ε ∈ [0.05, 10] lies between 2 and 1,000 and Theorem 2's λ̂ among the same orders.
ORDERS = np.array(sorted({1.25, 1.5, 1.75} | set(range(2, 33)) | {int(a) for a in np.geomspace(33, 1024, 31)}),
                  dtype=float)


@dataclass(frozen=True)
class TrialCount:
    """The distribution of the number of trials: its mean μ and shape η (math.inf: Poisson)."""

    mean: float
    shape: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and self.mean >= 1):
            raise UsageError(f"{param('trials')} (the mean number of trials) must be at least 1 (got {self.mean})")
        if not self.shape > 0:
            raise UsageError(f"{param('trials_shape')} must be positive, or inf for Poisson (got {self.shape})")

    @property
    def name(self) -> str:
        if math.isinf(self.shape):
            return "poisson"
        return "geometric" if self.shape == 1 else "truncated negative binomial"

    @functools.cached_property
    def gamma(self) -> float:
        """γ of the truncated negative binomial with this mean (its mean η(1/γ − 1)/(1 − γ^η) decreases in γ): the
        smaller end of the bisection, whose mean is at least μ, the conservative side."""
        if self.shape == 1:
            return 1.0 / self.mean
        low, high = 0.0, min(1.0, 2 * (self.shape + 1) / self.mean)
        while high > low * (1 + 1e-12):
            middle = (low + high) / 2
            if _tnb_mean(middle, self.shape) < self.mean:
                high = middle
            else:
                low = middle
        return low

    def draw(self, rng: np.random.Generator) -> int:
        """K: Poisson(μ), or a negative binomial NB(η, γ) conditioned on K ≥ 1 (drawn until positive)."""
        if math.isinf(self.shape):
            return int(rng.poisson(self.mean))
        if self.mean == 1:
            return 1
        while (count := int(rng.negative_binomial(self.shape, self.gamma))) == 0:
            pass
        return count

    def to_dict(self) -> dict:
        return {"distribution": self.name, "mean": self.mean, "shape": self.shape,
                **({} if math.isinf(self.shape) else {"gamma": self.gamma})}


def _tnb_mean(gamma: float, shape: float) -> float:
    if gamma >= 1.0:
        return 1.0
    return shape * (1 / gamma - 1) / (1 - gamma**shape)


def gaussian_rdp(noise_multiplier: float) -> np.ndarray:
    """RDP of one Gaussian mechanism with noise σ times its L2 sensitivity: λ / (2σ²)."""
    return ORDERS / (2 * noise_multiplier**2)


def subsampled_gaussian_rdp(noise_multiplier: float, sample_rate: float, steps: int) -> np.ndarray:
    """RDP of T Poisson-subsampled Gaussian steps (opacus' analysis; invalid values at extreme orders dropped)."""
    return steps * _one_step_rdp(noise_multiplier, sample_rate)


@functools.lru_cache(maxsize=4096)
def _one_step_rdp(noise_multiplier: float, sample_rate: float) -> np.ndarray:
    if sample_rate == 1.0:
        return gaussian_rdp(noise_multiplier)
    from opacus.accountants.analysis.rdp import compute_rdp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rdp = np.asarray(compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=1, orders=ORDERS))
    return np.where(np.isfinite(rdp) & (rdp >= 0), rdp, np.inf)


def repeat_and_select_rdp(trial: np.ndarray, count: TrialCount) -> np.ndarray:
    """The selection's RDP at every order from one trial's RDP `trial` (at ORDERS)."""
    if math.isinf(count.shape):
        out = np.array([trial[i] + count.mean * delta_of(trial, math.log1p(1 / (order - 1)))
                        + math.log(count.mean) / (order - 1) for i, order in enumerate(ORDERS)])
    else:
        constant = (1 + count.shape) * np.min((1 - 1 / ORDERS) * trial + math.log(1 / count.gamma) / ORDERS)
        out = trial + math.log(count.mean) / (ORDERS - 1) + constant
    # RDP is non-decreasing in the order: a bound at a higher order holds at every lower one
    return np.minimum.accumulate(out[::-1])[::-1]


def epsilon_of(rdp: np.ndarray, delta: float) -> float:
    """The (ε, δ)-DP guarantee of RDP values at ORDERS (the conversion of Canonne, Kamath & Steinke)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    return float(compute_epsilon(ORDERS, rdp, delta)[0])


def delta_of(rdp: np.ndarray, epsilon: float) -> float:
    from dp_accounting.rdp.rdp_privacy_accountant import compute_delta

    return float(compute_delta(ORDERS, rdp, epsilon)[0])


Mechanism = tuple[float, int]  # (sample rate, steps) of a candidate's training; (1.0, 1): one Gaussian release


def selection_epsilon(training: list[tuple[float, float, int]], score_sigma: float, count: TrialCount,
                      delta: float) -> float:
    """ε at δ of the whole selection from the candidates' training (σ, sample rate, steps) and the score's σ."""
    trial = np.max([subsampled_gaussian_rdp(*candidate) for candidate in training], axis=0)
    return epsilon_of(repeat_and_select_rdp(trial + gaussian_rdp(score_sigma), count), delta)


def recorded_selection_epsilon(record: dict) -> float:
    """ε of a selection recomputed from its ledger record alone (the JSON values methods/accounted.py writes)."""
    training = [(float(m["noise_multiplier"]), float(m["sample_rate"]), int(m["compositions"]))
                for m in (candidate["mechanism"] for candidate in record["trial"]["candidates"])]
    count = TrialCount(float(record["trial_count"]["mean"]), float(record["trial_count"]["shape"]))
    return selection_epsilon(training, float(record["trial"]["score"]["noise_multiplier"]), count,
                             float(record["delta"]))


@dataclass(frozen=True)
class SelectionPlan:
    """The noise of one trial: training σ per candidate mechanism and the score's σ (in correct-count units); the
    selection's total ε, one trial's training ε at δ alone, and the order at which the score's share was set."""

    training: dict[Mechanism, float]
    score_sigma: float
    epsilon: float
    training_epsilon: float
    reference_order: float


def plan_selection(epsilon: float, delta: float, count: TrialCount, score_share: float,
                   mechanisms: set[Mechanism]) -> SelectionPlan:
    """See `_plan`; planned once per process for the same arguments."""
    return _plan(epsilon, delta, count, score_share, frozenset(mechanisms))


@functools.lru_cache(maxsize=256)
def _plan(epsilon: float, delta: float, count: TrialCount, score_share: float,
          mechanisms: frozenset[Mechanism]) -> SelectionPlan:
    """Noise such that the selection's total ε at δ is at most (and within 1 % of) `epsilon`. One trial's training
    is calibrated to ε_t at δ; its score's Gaussian RDP is set to `score_share` of the trial's RDP at the order that
    converts the training's RDP best (Gaussian RDP is linear in the order, so a share of its slope). ε_t is searched
    so that the selection's bound meets the budget, and cached on disk."""
    if not 0 < score_share < 1:
        raise UsageError(f"{param('score_share')} must be in (0, 1) (got {score_share})")
    ordered = sorted(mechanisms)

    def plan(trial_epsilon: float, final: bool = False) -> SelectionPlan:
        training = {m: _trial_noise(m, trial_epsilon, delta, cached=final) for m in ordered}
        trial = np.max([subsampled_gaussian_rdp(sigma, rate, steps) for (rate, steps), sigma in training.items()],
                       axis=0)
        order = _best_order(trial, delta)
        slope = score_share / (1 - score_share) * float(np.interp(order, ORDERS, trial)) / order
        score_sigma = 1 / math.sqrt(2 * slope)
        candidates = [(sigma, rate, steps) for (rate, steps), sigma in training.items()]
        return SelectionPlan(training, score_sigma, selection_epsilon(candidates, score_sigma, count, delta),
                             trial_epsilon, order)

    key = f"select-v1|{epsilon!r}|{delta!r}|{count.mean!r}|{count.shape!r}|{score_share!r}|{ordered!r}"
    inverse = calibrate(lambda tau: plan(1 / tau).epsilon, epsilon, key, lambda goal: 3 / goal)
    return plan(1 / inverse, final=True)


def _best_order(rdp: np.ndarray, delta: float) -> float:
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    return float(compute_epsilon(ORDERS, rdp, delta)[1])


def _trial_noise(mechanism: Mechanism, epsilon: float, delta: float, cached: bool) -> float:
    """σ of one trial's training at ε (RDP at ORDERS, converted at δ); the plan's final values are cached on disk
    (the search's intermediate ones are not: the same deterministic solve gives the same σ)."""
    rate, steps = mechanism

    def eps_of(sigma: float) -> float:
        return epsilon_of(subsampled_gaussian_rdp(sigma, rate, steps), delta)

    def guess(goal: float) -> float:
        return max(rate * math.sqrt(2 * steps * math.log(1 / delta)) / goal, 0.5)

    if cached:
        return calibrate(eps_of, epsilon, f"select-trial-v1|{epsilon!r}|{delta!r}|{rate!r}|{steps}", guess)
    return solve_noise(eps_of, epsilon, guess)
